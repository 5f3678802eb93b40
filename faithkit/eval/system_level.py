"""System-level correlation by bootstrap simulation (Q² paper, Honovich et al. 2021, §5 / Table 4).

A metric used to compare dialogue systems should rank a system that is inconsistent more
often below one that is inconsistent less often. Real systems are few, so the paper
simulates them: for each inconsistency proportion p in 0.05, 0.10, …, 0.25 a "system"
answers ``samples`` (350) contexts, ``round(p * samples)`` of them with an inconsistent
response and the rest with a consistent one; its score is the mean metric score of its
responses. The Spearman correlation between the system scores and the systems' true
consistency (1 - p) is computed, and the whole draw repeated ``repetitions`` (1000) times.
The paper reports the mean correlation; we also report its spread (standard deviation
and the 2.5–97.5 percentile interval the authors' script prints).

How a repetition draws responses, as in the authors' ``sys_level.py``: the ``samples``
contexts are drawn once with replacement and shared by all systems of the repetition;
each system then picks its own random set of contexts to answer inconsistently. The
paper had cross-annotated pairs (a consistent and an inconsistent response to the same
context); with ``paired=True`` position i of the two score lists is taken to be the same
context. With unpaired pools (the default, as in the Q² WoW files, whose two sets come
from different contexts) a drawn context takes its consistent response from one random
row of the consistent pool and its inconsistent response from one of the inconsistent
pool.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

PROPORTIONS = (0.05, 0.10, 0.15, 0.20, 0.25)


def _pool(values: Sequence[float], name: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty list of scores")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"{name}[{bad[0]}] is {values[bad[0]]}; drop rows without a finite score first")
    return values


def simulate_system_scores(consistent_scores: Sequence[float], inconsistent_scores: Sequence[float],
                           proportions: Sequence[float] = PROPORTIONS, samples: int = 350,
                           repetitions: int = 1000, seed: int = 0, paired: bool = False) -> np.ndarray:
    """Mean metric score of each simulated system: an array of shape ``(repetitions, len(proportions))``."""
    consistent = _pool(consistent_scores, "consistent_scores")
    inconsistent = _pool(inconsistent_scores, "inconsistent_scores")
    if paired and len(consistent) != len(inconsistent):
        raise ValueError(f"paired=True needs one consistent and one inconsistent score per context, "
                         f"got {len(consistent)} and {len(inconsistent)}")
    if samples < 1 or repetitions < 1:
        raise ValueError(f"samples and repetitions must be positive, got {samples} and {repetitions}")
    if any(not 0 <= p <= 1 for p in proportions):
        raise ValueError(f"inconsistency proportions must lie in [0, 1], got {list(proportions)}")

    rng = np.random.default_rng(seed)
    system_scores = np.empty((repetitions, len(proportions)))
    for repetition in range(repetitions):
        contexts = rng.integers(len(consistent), size=samples)
        consistent_draw = consistent[contexts]
        inconsistent_draw = inconsistent[contexts if paired else rng.integers(len(inconsistent), size=samples)]
        for column, proportion in enumerate(proportions):
            chosen = np.zeros(samples, dtype=bool)
            chosen[rng.choice(samples, size=round(proportion * samples), replace=False)] = True
            system_scores[repetition, column] = np.where(chosen, inconsistent_draw, consistent_draw).mean()
    return system_scores


def system_level_correlation(consistent_scores: Sequence[float], inconsistent_scores: Sequence[float],
                             proportions: Sequence[float] = PROPORTIONS, samples: int = 350,
                             repetitions: int = 1000, seed: int = 0, paired: bool = False) -> dict:
    """Spearman correlation of simulated system scores with true consistency, over the repetitions.

    Returns ``mean``, ``std``, ``ci_low`` / ``ci_high`` (2.5 / 97.5 percentiles), the
    settings, and ``undefined``: how many repetitions gave every system the same score
    (a constant metric), whose correlation is undefined and left out of the statistics.
    """
    if len(set(proportions)) < 2:
        raise ValueError(f"a correlation needs at least two different proportions, got {list(proportions)}")
    system_scores = simulate_system_scores(consistent_scores, inconsistent_scores, proportions, samples,
                                           repetitions, seed, paired)
    consistency = 1 - np.asarray(proportions, dtype=float)
    correlations = _spearman_rows(system_scores, consistency)
    defined = correlations[np.isfinite(correlations)]
    nan = float("nan")
    return {
        "mean": float(defined.mean()) if len(defined) else nan,
        "std": float(defined.std()) if len(defined) else nan,
        "ci_low": float(np.percentile(defined, 2.5)) if len(defined) else nan,
        "ci_high": float(np.percentile(defined, 97.5)) if len(defined) else nan,
        "undefined": int(len(correlations) - len(defined)),
        "proportions": [float(p) for p in proportions],
        "samples": samples,
        "repetitions": repetitions,
        "seed": seed,
        "paired": paired,
    }


def _spearman_rows(rows: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row with ``target`` (as scipy's ``spearmanr``), NaN for a constant row."""
    row_ranks = scipy_stats.rankdata(rows, axis=1)
    target_ranks = scipy_stats.rankdata(target)
    row_dev = row_ranks - row_ranks.mean(axis=1, keepdims=True)
    target_dev = target_ranks - target_ranks.mean()
    spread = np.sqrt((row_dev ** 2).sum(axis=1) * (target_dev ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (row_dev @ target_dev) / np.where(spread > 0, spread, 1), np.nan)
