"""The one metric contract, in the style of ``evaluate``: keyword lists in, one flat dict out.

Every metric has

* ``compute_rows(documents, histories, responses, references=None) -> list[dict]``: one
  JSON-serialisable dict per example (what jobs write to files), and
* ``compute(documents=…, histories=…, responses=…, references=None) -> dict``: the same
  fields as per-example lists, plus ``mean_<key>`` for each of the metric's ``score_keys``.

Metrics that do not use histories (Q², NLI, lexical) or references (all but the relevance
part of ``lexical``) accept and ignore them, so a caller can run several metrics by name on
the same columns (:func:`faithkit.metrics.registry.load_metrics`). For ``evaluate`` itself
(``evaluate.load``, ``add_batch``, ``evaluate.combine``), :mod:`faithkit.metrics.evaluate_modules`
wraps these metrics, without a second implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Metric:
    """Base class: subclasses set ``score_keys`` and implement :meth:`compute_rows`; :meth:`compute` follows.

    Examples:

    ```python
    >>> from faithkit.metrics.base import Metric
    >>> class Words(Metric):
    ...     score_keys = ("words",)
    ...     def compute_rows(self, documents, histories, responses, references=None):
    ...         return [{"words": len(response.split())} for response in responses]
    >>> Words().compute(documents=["Emperor penguins live only in Antarctica."] * 2,
    ...                 responses=["They live only in Antarctica.", "Yes."])
    {'words': [5, 1], 'mean_words': 3.0}
    ```
    """

    score_keys: tuple[str, ...] = ()

    def compute_rows(
        self,
        documents: Sequence[str],
        histories: Sequence | None,
        responses: Sequence[str],
        references: Sequence[str] | None = None,
    ) -> list[dict]:
        raise NotImplementedError

    def compute(
        self,
        documents: Sequence[str],
        histories: Sequence | None = None,
        responses: Sequence[str] = (),
        references: Sequence[str] | None = None,
    ) -> dict:
        """Per-example fields as lists and ``mean_<key>`` of each score (examples without a score left out)."""
        return aggregate(self.compute_rows(documents, histories, responses, references), self.score_keys)


def aggregate(rows: list[dict], score_keys: Sequence[str]) -> dict:
    """``compute_rows`` output as one flat dict: a list per field and ``mean_<key>`` per score key present, the mean
    over the rows that have a value (a row without one is no zero).

    Args:
        rows (`list[dict]`): one dict per example.
        score_keys (`Sequence[str]`): the fields to average.

    Examples:

    ```python
    >>> from faithkit.metrics.base import aggregate
    >>> aggregate([{"pmi": 1.0, "tokens": 3}, {"pmi": None, "tokens": 0}, {"pmi": 0.5, "tokens": 2}], ["pmi"])
    {'pmi': [1.0, None, 0.5], 'tokens': [3, 0, 2], 'mean_pmi': 0.75}
    ```
    """
    result: dict[str, Any] = {
        key: [row.get(key) for row in rows] for key in dict.fromkeys(k for row in rows for k in row)
    }
    for key in score_keys:
        values = [v for v in result.get(key, []) if v is not None]
        if key in result:
            result[f"mean_{key}"] = sum(values) / len(values) if values else None
    return result


def check_not_empty(documents: Sequence[str], responses: Sequence[str]) -> None:
    """A ValueError naming the first example whose document or response is blank: there is nothing to judge, and a
    model would still give it a score.

    Args:
        documents (`Sequence[str]`): the examples' documents.
        responses (`Sequence[str]`): their responses.

    Examples:

    ```python
    >>> from faithkit.metrics.base import check_not_empty
    >>> check_not_empty(["Emperor penguins live only in Antarctica."], [" "])
    Traceback (most recent call last):
      ...
    ValueError: example 0: field 'response' is empty
    ```
    """
    for i, (document, response) in enumerate(zip(documents, responses)):
        for name, text in (("document", document), ("response", response)):
            if not text.strip():
                raise ValueError(f"example {i}: field '{name}' is empty")


def check_parsable(nlp, texts: Sequence[str], what: str) -> None:
    """A ValueError (the row's error, as a job records it) for the first of ``texts`` longer than the spaCy pipeline
    ``nlp`` parses at once (``nlp.max_length``, 1,000,000 characters by default), naming ``what`` it is and its
    length, before spaCy refuses it with its own E088 text.

    Args:
        nlp (`spacy.Language`): the pipeline that will parse the texts.
        texts (`Sequence[str]`): the texts.
        what (`str`): what they are, for the message (``"response"``).

    Examples:

    ```python
    >>> import spacy
    >>> from faithkit.metrics.base import check_parsable
    >>> nlp = spacy.blank("en")
    >>> nlp.max_length = 20
    >>> check_parsable(nlp, ["They live only in Antarctica."], "response")
    Traceback (most recent call last):
      ...
    ValueError: the response is 29 characters, more than spaCy parses at once (20, its nlp.max_length); shorten it
    ```
    """
    for text in texts:
        if len(text) > nlp.max_length:
            raise ValueError(
                f"the {what} is {len(text):,} characters, more than spaCy parses at once ({nlp.max_length:,}, "
                "its nlp.max_length); shorten it"
            )


def check_columns(documents, histories, responses, references=None) -> tuple[list, list, list, list | None]:
    """The columns as lists of equal length (no histories: empty ones); a single string where a list belongs is a
    TypeError naming the field (it would otherwise be read as one example per character).

    Args:
        documents (`Sequence[str]`): one document per example.
        histories (`Sequence`, *optional*): one history per example (None: none).
        responses (`Sequence[str]`): one response per example.
        references (`Sequence[str]`, *optional*): one reference per example.

    Examples:

    ```python
    >>> from faithkit.metrics.base import check_columns
    >>> check_columns(["A document."], None, ["A response."])
    (['A document.'], [[]], ['A response.'], None)
    >>> check_columns("A document.", None, ["A response."])
    Traceback (most recent call last):
      ...
    TypeError: documents must be a list, got a single string; wrap it in a list
    ```
    """
    if histories is None and not isinstance(documents, str):
        histories = [[] for _ in documents]
    columns = {"documents": documents, "histories": histories, "responses": responses}
    if references is not None:
        columns["references"] = references
    for name, column in columns.items():
        if isinstance(column, str):
            raise TypeError(f"{name} must be a list, got a single string; wrap it in a list")
    lists = {name: list(column) for name, column in columns.items()}
    lengths = {name: len(column) for name, column in lists.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(
            f"{', '.join(lengths)} must have the same length, got {', '.join(str(n) for n in lengths.values())}"
        )
    for name in ("documents", "responses", "references"):
        for i, text in enumerate(lists.get(name) or []):
            if not isinstance(text, str):
                raise TypeError(f"example {i}: field '{name[:-1]}' must be a string, got {type(text).__name__}")
    return lists["documents"], lists["histories"], lists["responses"], lists.get("references")
