"""Word-level measures, each written once: answer F1, overlap and BLEU with the knowledge, relevance to a reference.

* :func:`normalize_answer` / :func:`token_f1`: the SQuAD answer comparison Q² uses, and
  the token F1 of a response against its gold (reference) response.
* :func:`knowledge_precision`: share of the response's content words found in the document.
* :class:`Lexical` (metric ``lexical``): knowledge precision per response and, given
  references, token F1 and BLEU against them (relevance).
* :class:`ResponseForm` (metric ``form``): words, empty and looping responses, the shares a
  decoding sweep watches so that a faithful-looking but degenerate setting shows.
* :class:`TextOverlap` (metrics ``overlap-f1`` and ``document-bleu``): the lexical *faithfulness*
  baselines of the Q² and PMI-FAITH papers. A faithfulness metric is only worth its cost if
  it beats these, so every meta-evaluation reports them beside the metric. They follow the
  Q² authors' ``baselines.py``:

- ``token_f1_overlap``: spaCy tokens, lowercased, without stop words and punctuation;
  F1 of the response's tokens against the knowledge's (bag-of-words, counts clipped).
- ``bleu_vs_knowledge``: sacrebleu BLEU of the response with the knowledge as the single
  reference, on the usual 0–100 scale.

Where we differ: tokens come from spaCy's English tokenizer and lexical attributes
(``spacy.blank("en")``), which give the same tokens, stop words and punctuation flags as
``en_core_web_sm`` without loading its tagger and parser, which the baseline never uses.
The authors' BLEU lowercases only the knowledge (a capitalised response word then never
matches); we lowercase both sides, and use sentence BLEU (effective n-gram order, as
sacrebleu does for single sentences) instead of a one-sentence corpus BLEU.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from .base import Metric, check_columns

KINDS = {"overlap-f1": "overlap_f1", "document-bleu": "document_bleu"}  # kind (the metric's name): output key
REPEAT_RUN = 3
"""A response is *repeated* when one word comes this many times in a row ("no no no"), or one
three-word sequence this many times anywhere ("i love it. i love it. i love it."): the loops
greedy and beam search fall into, which narrow decoding sets can make worse."""
_WORD = re.compile(r"\w+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, strip punctuation and the articles a/an/the, collapse whitespace (SQuAD): answers that differ only
    in these compare equal.

    Args:
        text (`str`): an answer.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import normalize_answer
    >>> normalize_answer("The Arctic, of course!")
    'arctic of course'
    ```
    """
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(gold: str, predicted: str) -> float:
    """Token-level F1 of two texts after :func:`normalize_answer`; an empty side scores 0.

    Args:
        gold (`str`): the reference answer or response.
        predicted (`str`): the answer or response compared with it.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import token_f1
    >>> token_f1("in Antarctica", "only in Antarctica"), token_f1("yes", "no")
    (0.8, 0.0)
    ```
    """
    gold_tokens, predicted_tokens = normalize_answer(gold).split(), normalize_answer(predicted).split()
    common = sum((Counter(gold_tokens) & Counter(predicted_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


@lru_cache(maxsize=1)
def _tokenizer():
    import spacy

    return spacy.blank("en")


SPACY_PIECE = 100_000
"""Characters spaCy tokenises at once: a longer text goes in pieces cut at whitespace, which spaCy splits on first,
so the tokens are the same; a whole 50 MB document would pass spaCy's ``max_length`` (1,000,000) and hold a Doc of
it in memory."""


def content_tokens(text: str) -> list[str]:
    """Lowercased spaCy tokens of ``text`` without stop words, punctuation or whitespace: the words that carry a
    claim.

    Args:
        text (`str`): any text, however long (spaCy reads it in pieces).

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import content_tokens
    >>> content_tokens("They live only in the Antarctic winter!")
    ['live', 'antarctic', 'winter']
    ```
    """
    return [
        token.text.lower()
        for piece in _pieces(text)
        for token in _tokenizer()(piece)
        if not token.is_stop and not token.is_punct and not token.is_space
    ]


LEXICAL_MAX_CHARS = 5_000_000
"""The longest text (document, response or reference) the lexical measures read: spaCy tokenises about a megabyte a
second, so a longer one is a row error in a few milliseconds instead of minutes of work."""


def check_lexical_lengths(**fields: Sequence[str] | None) -> None:
    """A ValueError naming the example and the field when a text is longer than :data:`LEXICAL_MAX_CHARS`.

    Args:
        **fields (`Sequence[str]`): each field's texts by the field's name (None: no such column).

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import check_lexical_lengths
    >>> check_lexical_lengths(document=["A document."], response=["x" * 5_000_001])
    Traceback (most recent call last):
      ...
    ValueError: example 0: field 'response' has 5,000,001 characters, more than the 5,000,000 the lexical measures read; shorten it (pmi-faith and the other model metrics keep its end)
    ```
    """
    for name, texts in fields.items():
        for index, text in enumerate(texts or ()):
            if isinstance(text, str) and len(text) > LEXICAL_MAX_CHARS:
                raise ValueError(
                    f"example {index}: field '{name}' has {len(text):,} characters, more than the "
                    f"{LEXICAL_MAX_CHARS:,} the lexical measures read; shorten it (pmi-faith and the other model "
                    f"metrics keep its end)"
                )


def _pieces(text: str, size: int = SPACY_PIECE):
    """``text`` in pieces of at most about ``size`` characters, each ending at whitespace where there is some."""
    start = 0
    while len(text) - start > size:
        cut = max(text.rfind(" ", start, start + size), text.rfind("\n", start, start + size))
        end = cut + 1 if cut > start else start + size  # one unbroken run of size characters: cut inside it
        yield text[start:end]
        start = end
    yield text[start:]


def token_f1_overlap(knowledge: str, response: str) -> float:
    """F1 of the response's content tokens against the knowledge's: 1.0 when they are the same bag of words.

    Args:
        knowledge (`str`): the document.
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import token_f1_overlap
    >>> round(token_f1_overlap("Emperor penguins live only in Antarctica. They breed during the Antarctic winter.", "They live in Antarctica."), 4)
    0.4444
    ```
    """
    response_tokens = content_tokens(response)
    knowledge_tokens = content_tokens(knowledge)
    same = sum((Counter(response_tokens) & Counter(knowledge_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(response_tokens)
    recall = same / len(knowledge_tokens)
    return 2 * precision * recall / (precision + recall)


def knowledge_precision(document: str, response: str) -> float | None:
    """Share of the response's content words that occur in the document; None when it has none (nothing to check).

    Args:
        document (`str`): the document.
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import knowledge_precision
    >>> document = "Emperor penguins live only in Antarctica. They breed during the Antarctic winter."
    >>> knowledge_precision(document, "They live in the Arctic."), knowledge_precision(document, "They do.")
    (0.5, None)
    ```
    """
    words = content_tokens(response)
    if not words:
        return None
    known = set(content_tokens(document))
    return sum(word in known for word in words) / len(words)


@lru_cache(maxsize=1)
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU(lowercase=True, effective_order=True)


def bleu_vs_knowledge(knowledge: str, response: str) -> float:
    """Sentence BLEU (0–100) of the response with the knowledge as its reference, both lowercased.

    Args:
        knowledge (`str`): the document.
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import bleu_vs_knowledge
    >>> round(bleu_vs_knowledge("Emperor penguins live only in Antarctica. They breed during the Antarctic winter.", "Emperor penguins live only in Antarctica."), 4)
    36.7879
    ```
    """
    return float(_bleu().sentence_score(response, [knowledge]).score)


class TextOverlap(Metric):
    """A faithfulness baseline as a metric: ``kind`` ``"overlap-f1"`` (key ``overlap_f1``) or ``"document-bleu"`` (key
    ``document_bleu``, not :class:`Lexical`'s ``bleu``, which is against the gold response).

    Both compare the response with the knowledge only; histories and references are ignored.

    Args:
        kind (`str`, defaults to "overlap-f1"): ``"overlap-f1"`` (:func:`token_f1_overlap`) or ``"document-bleu"``
            (:func:`bleu_vs_knowledge`).

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import TextOverlap
    >>> TextOverlap("document-bleu").compute(documents=["Emperor penguins live only in Antarctica. They breed during the Antarctic winter."],
    ...                                      responses=["Emperor penguins live only in Antarctica."])
    {'document_bleu': [36.78794411714425], 'mean_document_bleu': 36.78794411714425}
    ```
    """

    def __init__(self, kind: str = "overlap-f1"):
        if kind not in KINDS:
            raise ValueError(f"unknown baseline kind {kind!r}; choose one of {', '.join(KINDS)}")
        self.kind = kind
        self.score_key = KINDS[kind]
        self.score_keys = (self.score_key,)
        self._function = token_f1_overlap if kind == "overlap-f1" else bleu_vs_knowledge

    def compute_rows(
        self,
        documents: Sequence[str],
        histories: Sequence | None,
        responses: Sequence[str],
        references: Sequence[str] | None = None,
    ) -> list[dict]:
        """One ``{score_key: value}`` per example."""
        documents, _, responses, _ = check_columns(documents, histories, responses)
        check_lexical_lengths(document=documents, response=responses)
        return [
            {self.score_key: self._function(document, response)} for document, response in zip(documents, responses)
        ]


class Lexical(Metric):
    """Knowledge precision, and with references the relevance measures of generation papers.

    Per example: ``knowledge_precision`` (None for a response without content words), and
    when ``references`` are given ``token_f1`` (:func:`token_f1` against the reference) and
    ``bleu`` (sacrebleu sentence BLEU against the reference, 0–100). :meth:`compute` adds
    ``corpus_bleu``, the sacrebleu corpus BLEU that papers report.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import Lexical
    >>> result = Lexical().compute(documents=["Emperor penguins live only in Antarctica. They breed during the Antarctic winter."] * 2,
    ...                            responses=["They live only in Antarctica.", "They live in the Arctic."],
    ...                            references=["Only in Antarctica.", "In Antarctica."])
    >>> result["knowledge_precision"], [round(f1, 4) for f1 in result["token_f1"]], round(result["corpus_bleu"], 4)
    ([1.0, 0.5], [0.75, 0.3333], 16.2334)
    ```
    """

    score_keys = ("knowledge_precision", "token_f1", "bleu")

    def compute_rows(
        self,
        documents: Sequence[str],
        histories: Sequence | None,
        responses: Sequence[str],
        references: Sequence[str] | None = None,
    ) -> list[dict]:
        documents, _, responses, references = check_columns(documents, histories, responses, references)
        check_lexical_lengths(document=documents, response=responses, reference=references)
        rows = [{"knowledge_precision": knowledge_precision(d, r)} for d, r in zip(documents, responses)]
        for row, response, reference in zip(rows, responses, references or []):
            row["token_f1"] = token_f1(reference, response)
            row["bleu"] = float(_bleu().sentence_score(response, [reference]).score)
        return rows

    def compute(self, documents, histories=None, responses=(), references=None) -> dict:
        result = super().compute(documents, histories, responses, references)
        if references is not None:
            result["corpus_bleu"] = corpus_bleu(responses, references)
        return result


def corpus_bleu(responses: Sequence[str], references: Sequence[str]) -> float:
    """sacrebleu corpus BLEU (0–100) of the responses against one reference each, as papers report it.

    Args:
        responses (`Sequence[str]`): the responses.
        references (`Sequence[str]`): one reference per response.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import corpus_bleu
    >>> round(corpus_bleu(["They live only in Antarctica."], ["They live only in Antarctica, in the cold."]), 4)
    40.8306
    ```
    """
    import sacrebleu

    return float(sacrebleu.corpus_bleu(list(responses), [list(references)]).score)


def is_repeated(response: str) -> bool:
    """Whether the response loops (see :data:`REPEAT_RUN`); words are lowercased ``\\w+`` runs.

    Args:
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import is_repeated
    >>> is_repeated("no no no"), is_repeated("i love it. i love it. i love it."), is_repeated("They live in Antarctica.")
    (True, True, False)
    ```
    """
    words = _WORD.findall(response.lower())
    for start in range(len(words) - REPEAT_RUN + 1):
        if len(set(words[start : start + REPEAT_RUN])) == 1:
            return True
    trigrams: dict[tuple, int] = {}
    for start in range(len(words) - 2):
        gram = tuple(words[start : start + 3])
        trigrams[gram] = trigrams.get(gram, 0) + 1
        if trigrams[gram] >= REPEAT_RUN:
            return True
    return False


class ResponseForm(Metric):
    """The form of each response, no model needed: ``words`` (whitespace-separated), ``empty`` and ``repeated``
    (:func:`is_repeated`), the last two as 0/1, so their means are shares.

    Examples:

    ```python
    >>> from faithkit.metrics.lexical import ResponseForm
    >>> result = ResponseForm().compute(documents=["Emperor penguins live only in Antarctica. They breed during the Antarctic winter."] * 3,
    ...                                 responses=["They live only in Antarctica.", "", "no no no"])
    >>> result["words"], result["empty"], result["repeated"], round(result["mean_repeated"], 4)
    ([5, 0, 3], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], 0.3333)
    ```
    """

    score_keys = ("words", "empty", "repeated")

    def compute_rows(
        self,
        documents: Sequence[str],
        histories: Sequence | None,
        responses: Sequence[str],
        references: Sequence[str] | None = None,
    ) -> list[dict]:
        documents, _, responses, _ = check_columns(documents, histories, responses)
        return [
            {"words": len(r.split()), "empty": float(not r.strip()), "repeated": float(is_repeated(r))}
            for r in responses
        ]
