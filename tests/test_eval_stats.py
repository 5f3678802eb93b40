"""Meta-evaluation statistics against numbers worked out by hand."""

import math

import numpy as np
import pytest

from faithkit import stats

# Positives score 0.9, 0.8, 0.6; negatives 0.7, 0.5, 0.4.
SCORES = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
LABELS = [1, 1, 0, 1, 0, 0]


def test_auroc_counts_winning_pairs():
    # 0.9 and 0.8 beat all 3 negatives, 0.6 beats 2 of them: 8 of 9 pairs
    assert stats.auroc(SCORES, LABELS) == pytest.approx(8 / 9)


def test_auroc_counts_ties_as_half():
    assert stats.auroc([0.5, 0.5], [1, 0]) == 0.5
    # pairs: 1>0.5, 1>0, 0.5=0.5 (half), 0.5>0  ->  3.5 of 4
    assert stats.auroc([1.0, 0.5, 0.5, 0.0], [1, 1, 0, 0]) == pytest.approx(0.875)


def test_auroc_of_a_perfect_and_a_reversed_score():
    assert stats.auroc([3, 2, 1, 0], [1, 1, 0, 0]) == 1.0
    assert stats.auroc([3, 2, 1, 0], [0, 0, 1, 1]) == 0.0


def test_roc_curve_points_and_area():
    fpr, tpr, thresholds = stats.roc_curve(SCORES, LABELS)
    assert thresholds[0] == math.inf
    assert thresholds[1:].tolist() == [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    assert tpr.tolist() == pytest.approx([0, 1 / 3, 2 / 3, 2 / 3, 1, 1, 1])
    assert fpr.tolist() == pytest.approx([0, 0, 0, 1 / 3, 1 / 3, 2 / 3, 1])
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
    assert area == pytest.approx(stats.auroc(SCORES, LABELS))


def test_roc_curve_goes_diagonally_through_ties():
    fpr, tpr, _ = stats.roc_curve([0.5, 0.5], [1, 0])
    assert list(zip(fpr, tpr)) == [(0, 0), (1, 1)]


def test_classification_at_a_threshold():
    # >= 0.65 is positive: 0.9, 0.8 (true positives), 0.7 (false positive); 0.6 is a false negative
    result = stats.classification(SCORES, LABELS, 0.65)
    assert result == pytest.approx({"accuracy": 4 / 6, "precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})


def test_threshold_is_inclusive():
    assert stats.classification([0.5, 0.2], [1, 0], 0.5)["accuracy"] == 1.0


def test_classification_with_no_predicted_positive_reports_zeros():
    result = stats.classification(SCORES, LABELS, 2.0)
    assert result == {"accuracy": 0.5, "precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_best_f1_threshold():
    # F1 at 0.9, 0.8, 0.7, 0.6, 0.5, 0.4 = 0.5, 0.8, 2/3, 6/7, 0.75, 2/3
    assert stats.best_f1_threshold(SCORES, LABELS) == 0.6


def test_best_f1_threshold_prefers_the_highest_among_ties():
    # F1 at 4 and at 1 are both 2/3
    assert stats.best_f1_threshold([4, 3, 2, 1], [1, 0, 0, 1]) == 4


def test_correlations():
    # ranks 1..4 against label ranks 1.5, 1.5, 3.5, 3.5: 4 / (sqrt(5) * 2)
    assert stats.spearman([1, 2, 3, 4], [0, 0, 1, 1]) == pytest.approx(4 / (2 * math.sqrt(5)))
    assert stats.pearson([1, 2, 3, 4], [0, 0, 1, 1]) == pytest.approx(4 / (2 * math.sqrt(5)))
    assert stats.spearman([1, 2, 3, 10], [0, 0, 1, 1]) == pytest.approx(4 / (2 * math.sqrt(5)))
    # deviations -3, -2, -1, 6 against -0.5, -0.5, 0.5, 0.5: 5 / (sqrt(50) * 1)
    assert stats.pearson([1, 2, 3, 10], [0, 0, 1, 1]) == pytest.approx(5 / math.sqrt(50))


def test_correlation_with_a_constant_score_is_nan_without_warning(recwarn):
    assert math.isnan(stats.spearman([1, 1, 1], [0, 1, 1]))
    assert math.isnan(stats.pearson([1, 1, 1], [0, 1, 1]))
    assert not recwarn.list


def test_summarize_collects_everything():
    summary = stats.summarize(SCORES, LABELS, 0.65)
    assert summary["n"] == 6 and summary["n_positive"] == 3
    assert summary["mean_positive"] == pytest.approx((0.9 + 0.8 + 0.6) / 3)
    assert summary["mean_negative"] == pytest.approx((0.7 + 0.5 + 0.4) / 3)
    assert summary["threshold"] == 0.65
    assert summary["accuracy"] == pytest.approx(4 / 6)
    assert summary["auroc"] == pytest.approx(8 / 9)
    assert summary["spearman"] == pytest.approx(stats.spearman(SCORES, LABELS))
    assert summary["pearson"] == pytest.approx(stats.pearson(SCORES, LABELS))


def test_summarize_a_one_class_slice_reports_nan_auroc():
    summary = stats.summarize([0.3, 0.9], [1, 1], 0.5)
    assert math.isnan(summary["auroc"]) and math.isnan(summary["mean_negative"])
    assert summary["recall"] == 0.5


@pytest.mark.parametrize(
    "scores, labels, message",
    [
        ([0.1, 0.2], [1], "same length"),
        ([], [], "empty"),
        ([0.1, float("nan")], [1, 0], "position 1"),
        ([0.1, 0.2], [1, 2], "0/1"),
    ],
)
def test_bad_input_is_named(scores, labels, message):
    with pytest.raises(ValueError, match=message):
        stats.classification(scores, labels, 0.5)


def test_auroc_needs_both_classes():
    with pytest.raises(ValueError, match="both classes"):
        stats.auroc([0.1, 0.2], [1, 1])


# ---- intervals and paired tests on corpus aggregates (sweep cells) ---------------------------
def _mean_statistics(values):
    from faithkit.metrics.corpus import AGGREGATES

    return AGGREGATES["mean"].statistics(values, None, None), AGGREGATES["mean"].finish


def test_bootstrap_interval_equals_resampling_one_by_one():
    values = [0.3, 1.2, -0.4, 0.9, None, 2.0, 0.1]  # None: a response without a score (left out of the mean)
    statistics, finish = _mean_statistics(values)
    low, high = stats.bootstrap_interval(statistics, finish, resamples=500, seed=7)
    draws = np.random.default_rng(7).integers(0, len(values), size=(500, len(values)))  # the same draws, slowly
    means = []
    for draw in draws:
        kept = [values[i] for i in draw if values[i] is not None]
        means.append(sum(kept) / len(kept))
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])), abs=1e-12)
    assert stats.bootstrap_interval(statistics, finish, resamples=500, seed=7) == (low, high)  # seeded


def test_paired_permutation_test_against_the_exact_one():
    a = [0.9, 0.8, 1.1, 0.7, 1.3, 0.6, 1.0, 0.95]
    b = [0.5, 0.9, 0.6, 0.4, 0.8, 0.65, 0.7, 0.3]
    observed = abs(np.mean(a) - np.mean(b))
    exact = []  # every one of the 2^8 swaps
    for mask in range(2 ** len(a)):
        swap = [(mask >> i) & 1 for i in range(len(a))]
        mine = [y if s else x for x, y, s in zip(a, b, swap)]
        theirs = [x if s else y for x, y, s in zip(a, b, swap)]
        exact.append(abs(np.mean(mine) - np.mean(theirs)) >= observed - 1e-12)
    statistics_a, finish = _mean_statistics(a)
    statistics_b, _ = _mean_statistics(b)
    p = stats.paired_permutation_test(statistics_a, statistics_b, finish, permutations=4000, seed=0)
    assert p == pytest.approx(np.mean(exact), abs=0.01)
    assert stats.paired_permutation_test(statistics_a, statistics_a, finish) == 1.0  # a system against itself
    with pytest.raises(ValueError, match="same shape"):
        stats.paired_permutation_test(statistics_a, statistics_b[:3], finish)


def test_corpus_bleu_from_summed_statistics_is_sacrebleus():
    import sacrebleu

    from faithkit.metrics.corpus import AGGREGATES, corpus_value

    responses = ["the cat sat on the mat", "a dog", "", "hello there my friend", "it is 330 metres tall"]
    references = ["the cat is on the mat", "the dog barks", "nothing", "hello my friend", "it is 330 metres tall"]
    assert corpus_value("corpus_bleu", None, responses, references) == pytest.approx(
        sacrebleu.corpus_bleu(responses, [references]).score, abs=1e-12
    )
    bleu = AGGREGATES["corpus_bleu"]
    rows = bleu.statistics(None, responses, references)
    subset = [0, 3, 3, 4]  # a resample: the sum of its rows' statistics is that corpus's BLEU
    assert bleu.finish(rows[subset].sum(axis=0)) == pytest.approx(
        sacrebleu.corpus_bleu([responses[i] for i in subset], [[references[i] for i in subset]]).score, abs=1e-12
    )
    assert corpus_value("corpus_bleu", None, responses, None) is None


def test_holm_adjusts_step_down_by_rank_and_leaves_nan_out():
    # m = 3 members: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1 = 0.04, raised to the 0.06 before it
    adjusted = stats.holm([0.01, 0.04, 0.03, math.nan])
    assert adjusted[:3].tolist() == pytest.approx([0.03, 0.06, 0.06]) and math.isnan(adjusted[3])
    assert stats.holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # capped at 1
    rng = np.random.default_rng(0)  # the definition, written out slowly: max over j <= i of (m - j + 1) p_(j)
    p = rng.uniform(0, 0.2, size=7)
    ranked = np.sort(p)
    slow = {value: min(1.0, max((7 - j) * ranked[j] for j in range(i + 1))) for i, value in enumerate(ranked)}
    assert stats.holm(p).tolist() == pytest.approx([slow[value] for value in p])


def test_kendall_is_tau_b_with_ties():
    # of 6 pairs 4 concordant, none discordant, one tied in the scores, one in the labels: tau-b = 4 / sqrt(5 * 5)
    scores, labels = [1, 2, 3, 3], [0, 1, 1, 2]
    assert stats.kendall(scores, labels) == pytest.approx(4 / math.sqrt(5 * 5))
