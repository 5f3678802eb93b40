"""Meta-evaluation statistics: how well a metric's scores agree with binary human labels.

Every benchmark (BEGIN, Q² WoW) reports the same numbers, so they live here once, in
numpy/scipy only. Conventions used throughout:

- ``labels`` are 0/1 (or booleans); 1 is the positive class (faithful / consistent).
- A threshold ``t`` classifies ``score >= t`` as positive.
- Precision, recall and F1 are those of the positive class; a ratio with a zero
  denominator is 0.0 rather than an error, so a degenerate threshold still reports.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats


def _check(scores: Sequence[float], labels: Sequence[int], binary: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate once so every statistic fails with the same clear message; ``binary=False`` allows graded labels."""
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.ndim != 1 or len(scores) != len(labels):
        raise ValueError(f"scores and labels must be flat lists of the same length, got {scores.shape} and {labels.shape}")
    if len(scores) == 0:
        raise ValueError("scores and labels are empty; there is nothing to evaluate")
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        raise ValueError(f"score at position {bad[0]} is {scores[bad[0]]}; drop or fix rows without a finite score")
    if not binary:
        labels = labels.astype(float)
        if not np.isfinite(labels).all():
            raise ValueError(f"label at position {np.flatnonzero(~np.isfinite(labels))[0]} is not finite")
        return scores, labels
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels must be 0/1 (1 = positive class), got values {sorted(set(labels.tolist()))}")
    return scores, labels.astype(int)


def _both_classes(labels: np.ndarray, what: str) -> None:
    if labels.min() == labels.max():
        raise ValueError(f"{what} needs both classes in the labels, but all {len(labels)} are {labels[0]}")


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve: the chance a random positive outscores a random negative.

    Computed as the Mann-Whitney U statistic from average ranks, so a tie between a
    positive and a negative counts 0.5.
    """
    scores, labels = _check(scores, labels)
    _both_classes(labels, "AUROC")
    ranks = scipy_stats.rankdata(scores)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    u = ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def roc_curve(scores: Sequence[float], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC points ``(fpr, tpr, thresholds)``, one per distinct score, from (0, 0) to (1, 1).

    The first threshold is ``+inf`` (nothing positive); then each distinct score from the
    highest down, so tied scores move the curve diagonally, matching :func:`auroc`.
    """
    scores, labels = _check(scores, labels)
    _both_classes(labels, "a ROC curve")
    thresholds = np.unique(scores)[::-1]
    predicted = scores[None, :] >= thresholds[:, None]  # one row per threshold
    tpr = (predicted & (labels == 1)).sum(axis=1) / labels.sum()
    fpr = (predicted & (labels == 0)).sum(axis=1) / (labels == 0).sum()
    return (np.concatenate([[0.0], fpr]), np.concatenate([[0.0], tpr]), np.concatenate([[np.inf], thresholds]))


def classification(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    """Accuracy and the positive class's precision, recall and F1 when ``score >= threshold`` is positive."""
    scores, labels = _check(scores, labels)
    predicted = scores >= threshold
    tp = int((predicted & (labels == 1)).sum())
    fp = int((predicted & (labels == 0)).sum())
    fn = int((~predicted & (labels == 1)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    accuracy = float((predicted == (labels == 1)).mean())
    return {"accuracy": accuracy, "precision": precision, "recall": recall, "f1": f1}


def best_f1_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold (one of the scores) with the highest F1; pick it on dev, apply it to test.

    Among equally good thresholds the highest wins, so the choice is deterministic and the
    classifier calls as few responses faithful as the best F1 allows.
    """
    scores, labels = _check(scores, labels)
    best_threshold, best_f1 = math.inf, -1.0
    for threshold in np.unique(scores)[::-1]:
        f1 = classification(scores, labels, threshold)["f1"]
        if f1 > best_f1:
            best_threshold, best_f1 = float(threshold), f1
    return best_threshold


def _correlation(function, scores, labels) -> float:
    """scipy's correlation, but NaN (not a warning) when either side is constant; labels may be graded."""
    scores, labels = _check(scores, labels, binary=False)
    if len(scores) < 2 or scores.min() == scores.max() or labels.min() == labels.max():
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(function(scores, labels)[0])


def spearman(scores: Sequence[float], labels: Sequence[float]) -> float:
    """Spearman rank correlation of scores with labels (NaN when either is constant)."""
    return _correlation(scipy_stats.spearmanr, scores, labels)


def pearson(scores: Sequence[float], labels: Sequence[float]) -> float:
    """Pearson correlation of scores with labels (NaN when either is constant)."""
    return _correlation(scipy_stats.pearsonr, scores, labels)


def summarize(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    """Every statistic at once: counts, class means, classification at ``threshold``, AUROC, correlations.

    AUROC is NaN (not an error) when one class is missing, so a small per-source slice
    still gets a row in a report.
    """
    scores, labels = _check(scores, labels)
    has_both = labels.min() != labels.max()
    return {
        "n": len(scores),
        "n_positive": int(labels.sum()),
        "mean_positive": float(scores[labels == 1].mean()) if labels.any() else math.nan,
        "mean_negative": float(scores[labels == 0].mean()) if not labels.all() else math.nan,
        "threshold": float(threshold),
        **classification(scores, labels, threshold),
        "auroc": auroc(scores, labels) if has_both else math.nan,
        "spearman": spearman(scores, labels),
        "pearson": pearson(scores, labels),
    }


def bootstrap_interval(statistic, n: int, repetitions: int = 1000, confidence: float = 0.95,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(indices)`` over ``n`` resampled units (contexts, items).

    Each repetition draws ``n`` indices with replacement and calls ``statistic`` on them, so
    paired data stay paired: resample the unit, keep everything measured on it. Repetitions
    whose statistic is NaN (a constant resample has no correlation) are left out; with none
    left the interval is ``(nan, nan)``.
    """
    if n < 1 or repetitions < 1:
        raise ValueError(f"a bootstrap needs at least one unit and one repetition, got {n} and {repetitions}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    values = np.array([statistic(rng.integers(n, size=n)) for _ in range(repetitions)], dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)
