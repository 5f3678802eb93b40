"""Corpus-level aggregates as sums of per-response statistics.

A corpus number (a mean, sacrebleu's corpus BLEU) is ``finish(sum of each response's
statistics)``. Writing every aggregate that way lets a bootstrap interval or a paired test
resample responses by summing rows of one matrix, for any measure alike
(:mod:`faithkit.stats`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np


class Mean:
    """The mean of a per-response value over the responses that have one (booleans count as 0/1): each response's
    statistics are ``(value, 1)``, or ``(0, 0)`` without a value.

    Examples:

    ```python
    >>> from faithkit.metrics.corpus import Mean
    >>> statistics = Mean().statistics([1.0, None, 0.5, True], responses=[], references=None)
    >>> statistics.tolist(), round(Mean().finish(statistics.sum(axis=0)), 4)
    ([[1.0, 1.0], [0.0, 0.0], [0.5, 1.0], [1.0, 1.0]], 0.8333)
    ```
    """

    name = "mean"

    def statistics(self, values: Sequence, responses: Sequence[str], references: Sequence[str] | None) -> np.ndarray:
        return np.array([[0.0, 0.0] if v is None else [float(v), 1.0] for v in values], dtype=float).reshape(-1, 2)

    def finish(self, sums: np.ndarray) -> float | None:
        return float(sums[0] / sums[1]) if sums[1] else None


class CorpusBLEU:
    """sacrebleu's corpus BLEU (0–100) of the responses against their references; None without references. Each
    response's statistics are its n-gram matches and lengths, which add up over a corpus.

    Examples:

    ```python
    >>> from faithkit.metrics.corpus import CorpusBLEU
    >>> statistics = CorpusBLEU().statistics([], ["They live only in Antarctica."],
    ...                                      ["They live only in Antarctica, in the cold."])
    >>> statistics.shape, round(CorpusBLEU().finish(statistics.sum(axis=0)), 4)
    ((1, 10), 40.8306)
    ```
    """

    name = "corpus_bleu"

    def statistics(self, values: Sequence, responses: Sequence[str], references: Sequence[str] | None):
        if references is None:
            return None
        return np.array(_bleu()._extract_corpus_statistics(list(responses), [list(references)]), dtype=float)

    def finish(self, sums: np.ndarray) -> float:
        return float(_bleu()._compute_score_from_stats(sums.round().astype(int).tolist()).score)


@lru_cache(maxsize=1)
def _bleu():
    from sacrebleu.metrics import BLEU

    return BLEU()  # sacrebleu.corpus_bleu's defaults


AGGREGATES = {aggregate.name: aggregate for aggregate in (Mean(), CorpusBLEU())}


def corpus_value(aggregate: str, values: Sequence, responses: Sequence[str], references: Sequence[str] | None):
    """The corpus number itself (None when it cannot be computed).

    Args:
        aggregate (`str`): a name of :data:`AGGREGATES` (``mean``, ``corpus_bleu``).
        values (`Sequence`): each response's value (None: none).
        responses (`Sequence[str]`): the responses.
        references (`Sequence[str]`, *optional*): their references (corpus BLEU needs them).

    Examples:

    ```python
    >>> from faithkit.metrics.corpus import corpus_value
    >>> corpus_value("mean", [1.0, None, 0.5], ["a", "b", "c"], None), corpus_value("corpus_bleu", [None], ["a"], None)
    (0.75, None)
    ```
    """
    method = AGGREGATES[aggregate]
    statistics = method.statistics(values, responses, references)
    return None if statistics is None or not len(statistics) else method.finish(statistics.sum(axis=0))
