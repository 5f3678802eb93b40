"""The Q² paper's bootstrap system-level correlation, on synthetic metrics whose answer is known."""

import numpy as np
import pytest
from scipy import stats as scipy_stats

from faithkit.eval import system_level
from faithkit.eval.system_level import simulate_system_scores, system_level_correlation

RNG = np.random.default_rng(123)
RANDOM_POOL = RNG.random(150)


def test_a_perfect_metric_ranks_every_simulated_system_right():
    result = system_level_correlation([1.0] * 150, [0.0] * 150, repetitions=200)
    assert result["mean"] == 1.0 and result["std"] == 0.0 and result["undefined"] == 0


def test_system_score_of_a_perfect_metric_is_its_consistent_share():
    # round(p * 350) inconsistent responses: 18 (17.5 rounds to even), 35, 52 (52.49…), 70, 88 (87.5)
    scores = simulate_system_scores([1.0] * 10, [0.0] * 10, repetitions=3)
    expected = [1 - round(p * 350) / 350 for p in system_level.PROPORTIONS]
    assert scores.shape == (3, 5)
    assert np.allclose(scores, expected)


def test_a_random_metric_correlates_about_zero():
    # the same pool for both sets: a score that carries no information about consistency
    result = system_level_correlation(RANDOM_POOL, RANDOM_POOL, repetitions=500)
    assert abs(result["mean"]) < 0.1
    assert result["ci_low"] < -0.5 and result["ci_high"] > 0.5


def test_a_noisy_metric_lies_in_between():
    consistent = RNG.normal(0.6, 0.3, 300)
    inconsistent = RNG.normal(0.4, 0.3, 300)
    result = system_level_correlation(consistent, inconsistent, repetitions=300)
    assert 0.3 < result["mean"] < 0.99


def test_same_seed_same_numbers_other_seed_other_numbers():
    noisy = (RNG.normal(0.6, 0.3, 100), RNG.normal(0.5, 0.3, 100))
    first = system_level_correlation(*noisy, repetitions=100, seed=7)
    assert system_level_correlation(*noisy, repetitions=100, seed=7) == first
    assert system_level_correlation(*noisy, repetitions=100, seed=8)["mean"] != first["mean"]


def test_paired_pools_share_contexts():
    # each context's two responses score the same: no system can differ, so no correlation is defined
    result = system_level_correlation(RANDOM_POOL, RANDOM_POOL, repetitions=20, paired=True)
    assert result["undefined"] == 20 and np.isnan(result["mean"])
    with pytest.raises(ValueError, match="paired=True"):
        system_level_correlation([1.0, 0.5], [0.0], paired=True)


def test_rowwise_spearman_matches_scipy():
    rows = RNG.random((50, 5)).round(1)  # rounding makes ties
    target = np.array([0.95, 0.9, 0.85, 0.8, 0.75])
    ours = system_level._spearman_rows(rows, target)
    for row, value in zip(rows, ours):
        if np.ptp(row) == 0:
            assert np.isnan(value)
        else:
            assert value == pytest.approx(scipy_stats.spearmanr(row, target)[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"consistent_scores": []}, "non-empty"),
        ({"inconsistent_scores": [0.1, float("nan")]}, r"inconsistent_scores\[1\]"),
        ({"proportions": [0.1]}, "at least two"),
        ({"proportions": [0.1, 1.5]}, r"\[0, 1\]"),
        ({"samples": 0}, "positive"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    arguments = {"consistent_scores": [1.0, 0.8], "inconsistent_scores": [0.1, 0.2], **kwargs}
    with pytest.raises(ValueError, match=message):
        system_level_correlation(**arguments)
