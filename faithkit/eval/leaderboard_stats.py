"""The leaderboard's statistics: each score's AUROC (or Spearman and Kendall for graded labels) with a percentile
bootstrap interval, its best-F1 threshold, and the paired bootstrap test of every two scores, Holm-corrected."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats as scipy_stats

from .. import stats

LEVEL = 0.05
"""The level a paired difference must pass, after Holm's correction over its group's pairs, to count as real."""
RESULT_COLUMNS = (
    "group",
    "score",
    "direction",
    "n",
    "n_positive",
    "base_rate",
    "auroc",
    "auroc_low",
    "auroc_high",
    "threshold",
    "f1",
    "f1_always_positive",
    "balanced_accuracy",
)
GRADED_COLUMNS = (
    "group",
    "score",
    "direction",
    "n",
    "spearman",
    "spearman_low",
    "spearman_high",
    "kendall",
    "kendall_low",
    "kendall_high",
)
PAIRED_COLUMNS = (
    "group",
    "score_a",
    "score_b",
    "auroc_a",
    "auroc_b",
    "difference",
    "difference_low",
    "difference_high",
    "p_value",
    "p_holm",
)
"""A paired row: the AUROCs of two scores, their difference with its interval, its p-value and that p after Holm's
correction over the group's pairs; graded labels have ``spearman_a``/``spearman_b`` in place of the AUROCs."""


BOOTSTRAP_BLOCK = 4_000_000
"""Most drawn row indices held at once: resamples are drawn in blocks, so a large file stays in memory."""


def bootstrap_aurocs(scores: np.ndarray, labels: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """AUROC of each score (rows of ``scores``) on the same ``resamples`` draws of the rows: (scores, resamples).

    A draw with one class only has no AUROC (NaN)."""
    rng = np.random.default_rng(seed)
    block = max(1, BOOTSTRAP_BLOCK // len(labels))
    return np.concatenate(
        [
            _drawn_aurocs(scores, labels, rng.integers(0, len(labels), size=(size, len(labels))))
            for size in [block] * (resamples // block) + [resamples % block]
            if size
        ],
        axis=1,
    )


def _drawn_aurocs(scores: np.ndarray, labels: np.ndarray, draws: np.ndarray) -> np.ndarray:
    drawn_labels = labels[draws]
    positives = drawn_labels.sum(axis=1)
    pairs = positives * (len(labels) - positives)
    with np.errstate(invalid="ignore", divide="ignore"):
        aurocs = np.array(
            [
                (
                    (scipy_stats.rankdata(row[draws], axis=1) * drawn_labels).sum(axis=1)
                    - positives * (positives + 1) / 2
                )
                / pairs
                for row in scores
            ]
        )
    return np.where(pairs > 0, aurocs, np.nan)


def bootstrap_correlations(
    scores: np.ndarray, labels: np.ndarray, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and Kendall correlations of each score (rows of ``scores``) with graded ``labels`` on the same
    ``resamples`` draws of the rows: two (scores, resamples) arrays, NaN for a draw whose labels are all alike."""
    draws = np.random.default_rng(seed).integers(0, len(labels), size=(resamples, len(labels)))
    spearmans = np.full((len(scores), resamples), np.nan)
    kendalls = np.full((len(scores), resamples), np.nan)
    for r, drawn in enumerate(draws):
        for k, row in enumerate(scores):
            spearmans[k, r] = stats.spearman(row[drawn], labels[drawn])
            kendalls[k, r] = stats.kendall(row[drawn], labels[drawn])
    return spearmans, kendalls


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    if np.isnan(values).all():
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided paired-bootstrap p-value that a difference is 0: twice the smaller share of resampled differences
    at or beyond zero on either side, counting the resamples as ``(k + 1) / (resamples + 1)`` so that it is never 0
    (1000 resamples cannot show a p below 0.002); at most 1."""
    differences = differences[~np.isnan(differences)]
    if not len(differences):
        return math.nan
    beyond = min(np.count_nonzero(differences <= 0), np.count_nonzero(differences >= 0))
    return float(min(1.0, 2 * (beyond + 1) / (len(differences) + 1)))


def group_table(
    group: str,
    named_scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[list[dict], list[dict]]:
    """One group's result rows (per score) and paired rows (per two scores, with Holm's correction over them);
    NaN where the group has one class."""
    names = list(named_scores)
    both = labels.min() != labels.max()
    matrix = np.array([named_scores[name] for name in names], dtype=float)
    drawn = bootstrap_aurocs(matrix, labels, resamples, seed) if both else np.full((len(names), 1), np.nan)
    aurocs = [stats.auroc(row, labels) if both else math.nan for row in matrix]
    base_rate = float(labels.mean())
    results = []
    for name, row, auroc, draws in zip(names, matrix, aurocs, drawn):
        at_best = _at_best_f1_threshold(row, labels)
        results.append(
            {
                "group": group,
                "score": name,
                "n": len(labels),
                "n_positive": int(labels.sum()),
                "base_rate": base_rate,
                "auroc": auroc,
                **dict(zip(("auroc_low", "auroc_high"), _percentiles(draws, confidence))),
                "threshold": at_best["threshold"],
                "f1": at_best["f1"],
                "f1_always_positive": 2 * base_rate / (1 + base_rate),  # recall 1, precision the base rate
                "balanced_accuracy": at_best["balanced_accuracy"],
            }
        )
    return results, _paired(group, names, aurocs, drawn, confidence, "auroc")


def graded_table(
    group: str,
    named_scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[list[dict], list[dict]]:
    """:func:`group_table` for graded labels: per score Spearman and Kendall with bootstrap intervals, per two
    scores the paired bootstrap of their Spearman difference (Holm-corrected over the group's pairs)."""
    names = list(named_scores)
    matrix = np.array([named_scores[name] for name in names], dtype=float)
    spearmans, kendalls = bootstrap_correlations(matrix, labels, resamples, seed)
    values = [(stats.spearman(row, labels), stats.kendall(row, labels)) for row in matrix]
    results = [
        {
            "group": group,
            "score": name,
            "n": len(labels),
            "spearman": spearman,
            **dict(zip(("spearman_low", "spearman_high"), _percentiles(spearman_draws, confidence))),
            "kendall": kendall,
            **dict(zip(("kendall_low", "kendall_high"), _percentiles(kendall_draws, confidence))),
        }
        for name, (spearman, kendall), spearman_draws, kendall_draws in zip(names, values, spearmans, kendalls)
    ]
    return results, _paired(group, names, [spearman for spearman, _ in values], spearmans, confidence, "spearman")


def _paired(
    group: str, names: list[str], values: list[float], drawn: np.ndarray, confidence: float, key: str
) -> list[dict]:
    """Every two scores' difference of ``values`` (``key``: what they are) with the percentile interval and paired
    p of their ``drawn`` resampled differences, and that p after Holm's correction over the group's pairs
    (:data:`PAIRED_COLUMNS`)."""
    paired: list[dict] = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            differences = drawn[a] - drawn[b]
            low, high = _percentiles(differences, confidence)
            paired.append(
                {
                    "group": group,
                    "score_a": names[a],
                    "score_b": names[b],
                    f"{key}_a": values[a],
                    f"{key}_b": values[b],
                    "difference": values[a] - values[b],
                    "difference_low": low,
                    "difference_high": high,
                    "p_value": paired_p_value(differences),
                }
            )
    for row, adjusted in zip(paired, stats.holm(np.array([row["p_value"] for row in paired], dtype=float))):
        row["p_holm"] = float(adjusted)
    return paired


def _at_best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> dict:
    """The threshold of the best F1, that F1, and the balanced accuracy there (NaN for a class the labels lack)."""
    threshold = stats.best_f1_threshold(scores, labels)
    predicted = scores >= threshold
    rates = [
        float((predicted[labels == value] == bool(value)).mean()) if (labels == value).any() else math.nan
        for value in (0, 1)
    ]
    return {
        "threshold": threshold,
        "f1": stats.classification(scores, labels, threshold)["f1"],
        "balanced_accuracy": float(np.mean(rates)),
    }


def leaderboard(
    slices: Sequence[tuple[str, dict, np.ndarray]], resamples: int = 1000, seed: int = 0, graded: bool = False
) -> tuple[list[dict], list[dict]]:
    """Result and paired rows of each slice of :func:`row_slices` (``graded``: by :func:`graded_table`)."""
    results, paired = [], []
    table = graded_table if graded else group_table
    for group, scores, labels in slices:
        more, more_paired = table(group, scores, labels, resamples, seed)
        results += more
        paired += more_paired
    return results, paired
