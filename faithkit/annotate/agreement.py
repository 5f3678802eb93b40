"""Inter-annotator agreement: Krippendorff's alpha (nominal, ordinal, interval) and Fleiss' kappa.

Both take the same reliability data: one row per unit (a rated response), one column per
annotator, each cell the index of the chosen category in its order (0 = Agree, 1 = Neutral,
2 = Disagree for the annotation page) or NaN where that annotator gave no value.

Alpha follows Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": the
coincidence matrix ``o[c, k]`` counts, within every unit with at least two values, each
ordered pair of values from different annotators, weighted ``1 / (m_u - 1)``; its margins
``n_c`` give the expected disagreement, and ``alpha = 1 - D_o / D_e``. Fleiss' kappa
(Fleiss 1971) needs every unit rated by the same number of annotators.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

LEVELS = ("nominal", "ordinal", "interval")


def _reliability_data(ratings, categories: int) -> np.ndarray:
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise ValueError(f"ratings must be a units x annotators table, got shape {data.shape}")
    values = data[np.isfinite(data)]
    if ((values < 0) | (values >= categories) | (values != np.round(values))).any():
        raise ValueError(f"ratings must be category indices 0..{categories - 1} (NaN for no value)")
    return data


def value_counts(ratings, categories: int) -> np.ndarray:
    """Units x categories: how many annotators chose each category for each unit."""
    data = _reliability_data(ratings, categories)
    return np.stack([(data == category).sum(axis=1) for category in range(categories)], axis=1).astype(float)


def coincidences(ratings, categories: int) -> np.ndarray:
    """Krippendorff's coincidence matrix ``o[c, k]`` (categories x categories) of the pairable values."""
    counts = value_counts(ratings, categories)
    pairable = counts[counts.sum(axis=1) >= 2]
    per_unit = pairable[:, :, None] * pairable[:, None, :] - np.einsum("uc,ck->uck", pairable, np.eye(categories))
    return (per_unit / (pairable.sum(axis=1) - 1)[:, None, None]).sum(axis=0)


def _squared_differences(margins: np.ndarray, level: str) -> np.ndarray:
    categories = np.arange(len(margins))
    if level == "nominal":
        return (categories[:, None] != categories[None, :]).astype(float)
    if level == "interval":
        return (categories[:, None] - categories[None, :]).astype(float) ** 2
    # ordinal: the values passed between c and k, counting c and k by half
    cumulative = np.concatenate([[0.0], np.cumsum(margins)])
    low, high = np.minimum.outer(categories, categories), np.maximum.outer(categories, categories)
    between = cumulative[high + 1] - cumulative[low] - (margins[low] + margins[high]) / 2
    return between**2


def krippendorff_alpha(ratings, categories: int, level: str = "ordinal") -> float:
    """Krippendorff's alpha of ``ratings`` (units x annotators, category indices, NaN missing).

    1 is perfect agreement, 0 agreement at chance; NaN when fewer than two values are
    pairable or every pairable value is the same (no disagreement is possible).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    matrix = coincidences(ratings, categories)
    margins = matrix.sum(axis=1)
    total = margins.sum()
    delta = _squared_differences(margins, level)
    expected = (np.outer(margins, margins) * delta).sum()
    if total < 2 or expected == 0:
        return math.nan
    return float(1 - (total - 1) * (matrix * delta).sum() / expected)


def fleiss_kappa(ratings, categories: int) -> float:
    """Fleiss' kappa of ``ratings`` (units x annotators, category indices); every unit needs every annotator's value.

    NaN when every rating falls in one category (chance agreement is then 1).
    """
    data = _reliability_data(ratings, categories)
    if not np.isfinite(data).all():
        raise ValueError("Fleiss' kappa needs a value from every annotator for every unit")
    raters = data.shape[1]
    if raters < 2 or not len(data):
        return math.nan
    counts = value_counts(data, categories)
    observed = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    shares = counts.sum(axis=0) / counts.sum()
    chance = float((shares**2).sum())
    if chance == 1:
        return math.nan
    return float((observed.mean() - chance) / (1 - chance))


def agreement(ratings: Sequence[Sequence[float]], categories: int) -> dict:
    """Ordinal Krippendorff's alpha and Fleiss' kappa of one table of ratings."""
    return {
        "krippendorff_alpha": krippendorff_alpha(ratings, categories, "ordinal"),
        "fleiss_kappa": fleiss_kappa(ratings, categories),
    }
