"""Statistics: how well a metric's scores agree with binary human labels, and how sure a corpus number is.

Every benchmark (BEGIN, Q² WoW) reports the same numbers, so they live here once, in
numpy/scipy only. :func:`bootstrap_interval` and :func:`paired_permutation_test` work on any
corpus aggregate written as ``finish(sum of per-item statistics)``
(:mod:`faithkit.metrics.corpus`): a mean, corpus BLEU. Conventions used throughout:

- ``labels`` are 0/1 (or booleans); 1 is the positive class (faithful / consistent).
- A threshold ``t`` classifies ``score >= t`` as positive.
- Precision, recall and F1 are those of the positive class; a ratio with a zero
  denominator is 0.0 rather than an error, so a degenerate threshold still reports.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike


def _check(scores: ArrayLike, labels: ArrayLike, binary: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Validate once so every statistic fails with the same clear message; ``binary=False`` allows graded labels."""
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.ndim != 1 or len(scores) != len(labels):
        raise ValueError(
            f"scores and labels must be flat lists of the same length, got {scores.shape} and {labels.shape}"
        )
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


def auroc(scores: ArrayLike, labels: ArrayLike) -> float:
    """Area under the ROC curve: the chance a random positive outscores a random negative.

    Computed as the Mann-Whitney U statistic from average ranks, so a tie between a
    positive and a negative counts 0.5.
    """
    scores, labels = _check(scores, labels)
    _both_classes(labels, "AUROC")
    from scipy.stats import rankdata  # scipy on first use: a sweep refused on its command line never loads it

    ranks = rankdata(scores)
    n_pos = int(labels.sum())
    n_neg = len(labels) - n_pos
    u = ranks[labels == 1].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def roc_curve(scores: ArrayLike, labels: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def classification(scores: ArrayLike, labels: ArrayLike, threshold: float) -> dict:
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


def best_f1_threshold(scores: ArrayLike, labels: ArrayLike) -> float:
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


def spearman(scores: ArrayLike, labels: ArrayLike) -> float:
    """Spearman rank correlation of scores with labels (NaN when either is constant)."""
    from scipy.stats import spearmanr

    return _correlation(spearmanr, scores, labels)


def pearson(scores: ArrayLike, labels: ArrayLike) -> float:
    """Pearson correlation of scores with labels (NaN when either is constant)."""
    from scipy.stats import pearsonr

    return _correlation(pearsonr, scores, labels)


def correlation_interval(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of a Spearman correlation ``r`` over ``n`` pairs: Fisher's z with the variance
    ``(1 + r**2 / 2) / (n - 3)`` of Bonett and Wright (2000, Psychometrika 65). NaN when ``n < 4`` or ``r`` is."""
    if n < 4 or not math.isfinite(r):
        return math.nan, math.nan
    if abs(r) == 1:
        return r, r
    from scipy.stats import norm

    half = norm.ppf(0.5 + confidence / 2) * math.sqrt((1 + r * r / 2) / (n - 3))
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def kendall(scores: ArrayLike, labels: ArrayLike) -> float:
    """Kendall's tau-b of scores with labels (NaN when either is constant): ties, common in graded labels, count."""
    from scipy.stats import kendalltau

    return _correlation(kendalltau, scores, labels)


def holm(p_values: ArrayLike) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (NaN ones are no member and stay NaN): the i-th smallest
    of m becomes ``max over j <= i of min(1, (m - j + 1) * p_(j))``, so comparing each with the level keeps the
    chance of any false positive in the family below it."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full_like(p, np.nan)
    members = np.flatnonzero(~np.isnan(p))
    order = members[np.argsort(p[members], kind="stable")]
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p[index]))
        adjusted[index] = running
    return adjusted


def balanced_accuracy(scores: ArrayLike, labels: ArrayLike, threshold: float) -> float:
    """The mean of the two classes' recalls when ``score >= threshold`` is positive (0.5 is chance whatever the
    class balance)."""
    scores, labels = _check(scores, labels)
    _both_classes(labels, "balanced accuracy")
    predicted = scores >= threshold
    return float((predicted[labels == 1].mean() + (~predicted[labels == 0]).mean()) / 2)


def best_balanced_threshold(scores: ArrayLike, labels: ArrayLike) -> float:
    """The threshold (one of the scores) with the highest balanced accuracy; among equally good ones the highest."""
    scores, labels = _check(scores, labels)
    best_threshold, best = math.inf, -1.0
    for threshold in np.unique(scores)[::-1]:
        value = balanced_accuracy(scores, labels, threshold)
        if value > best:
            best_threshold, best = float(threshold), value
    return best_threshold


def expected_calibration_error(probabilities: ArrayLike, labels: ArrayLike, bins: int = 10) -> float:
    """How far predicted probabilities are from observed frequencies: over ``bins`` equal-width bins of [0, 1] (the
    last one closed), the mean of |share of positives - mean probability| weighted by each bin's share of rows."""
    probabilities, labels = _check(probabilities, labels)
    if probabilities.min() < 0 or probabilities.max() > 1:
        raise ValueError("expected calibration error needs probabilities in [0, 1]")
    which = np.minimum((probabilities * bins).astype(int), bins - 1)
    error = 0.0
    for number in np.unique(which):
        members = which == number
        error += members.mean() * abs(labels[members].mean() - probabilities[members].mean())
    return float(error)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    """Coefficients and intercept minimising mean log-loss + ``l2`` / 2 * |w|^2 (intercept not penalised).

    ``x`` should be standardised (``l2`` then weighs every feature alike). L-BFGS on the exact gradient.

    Args:
        x (`np.ndarray`): ``(rows, features)``, standardised.
        y (`np.ndarray`): 0/1 labels.
        l2 (`float`): the penalty on the coefficients.

    Examples:

    ```python
    >>> import numpy as np
    >>> from faithkit.stats import fit_logistic
    >>> coefficients, intercept = fit_logistic(np.array([[-1.0], [0.0], [1.0], [2.0]]), np.array([0, 0, 1, 1]), l2=0.1)
    >>> round(float(coefficients[0]), 2), round(intercept, 2)
    (1.51, -0.75)
    ```
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ theta[1:] + theta[0]
        value = np.mean(np.logaddexp(0, z) - y * z) + l2 / 2 * theta[1:] @ theta[1:]
        residual = (1 / (1 + np.exp(-z)) - y) / len(y)
        return value, np.concatenate([[residual.sum()], x.T @ residual + l2 * theta[1:]])

    from scipy import optimize

    result = optimize.minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B")
    return result.x[1:], float(result.x[0])


def summarize(scores: ArrayLike, labels: ArrayLike, threshold: float) -> dict:
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


def bootstrap_interval(
    statistics: np.ndarray,
    finish: Callable[[np.ndarray], float | None],
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple:
    """Percentile bootstrap interval of ``finish(statistics.sum(0))`` over the items (rows), seeded.

    ``statistics`` has one row of sufficient statistics per item (context); each resample draws
    the items with replacement. Returns ``(low, high)``, ``(None, None)`` when no resample has a value.
    """
    statistics = np.asarray(statistics, dtype=float)
    counts = _resample_counts(len(statistics), resamples, seed)
    values = _finish_rows(counts @ statistics, finish)
    if np.isnan(values).all():
        return None, None
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def paired_permutation_test(
    statistics_a: np.ndarray,
    statistics_b: np.ndarray,
    finish: Callable[[np.ndarray], float | None],
    permutations: int = 1000,
    seed: int = 0,
) -> float | None:
    """Two-sided p-value that systems A and B, scored on the same items, have the same corpus value.

    Approximate randomisation (paired permutation): each permutation swaps A's and B's
    statistics on a random half of the items and recomputes ``finish(A) - finish(B)``; the
    p-value is the share of permutations, counting the observed one, at least as far from 0
    as the observed difference. None when either corpus value cannot be computed.
    """
    a, b = np.asarray(statistics_a, dtype=float), np.asarray(statistics_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired statistics must have the same shape, got {a.shape} and {b.shape}")
    observed_a, observed_b = finish(a.sum(axis=0)), finish(b.sum(axis=0))
    if observed_a is None or observed_b is None:
        return None
    observed = abs(observed_a - observed_b)
    swap = np.random.default_rng(seed).integers(0, 2, size=(permutations, len(a))).astype(float)
    sums_a, sums_b = (1 - swap) @ a + swap @ b, swap @ a + (1 - swap) @ b
    differences = np.abs(_finish_rows(sums_a, finish) - _finish_rows(sums_b, finish))
    at_least = np.count_nonzero(differences >= observed - 1e-12 * max(1.0, observed))
    return float((at_least + 1) / (permutations + 1))


def _resample_counts(items: int, resamples: int, seed: int) -> np.ndarray:
    """How often each item is drawn in each resample: a (resamples, items) matrix."""
    draws = np.random.default_rng(seed).integers(0, items, size=(resamples, items))
    return np.stack([np.bincount(row, minlength=items) for row in draws]).astype(float)


def _finish_rows(sums: np.ndarray, finish) -> np.ndarray:
    values = [finish(row) for row in sums]
    return np.array([math.nan if v is None else v for v in values], dtype=float)
