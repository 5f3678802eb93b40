"""The claim checker's one reading (P(faithful) from its three probabilities, a verdict), its calibration figures,
and its presets: one per adapter, the default under keys that stay."""

import math
import random
import shutil

import numpy as np
import pytest

from faithkit import stats
from faithkit.errors import ConfigError, InputError
from faithkit.metrics import faithkit_checker
from faithkit.metrics.checker_reading import FEATURES, Reading, features, fit_reading
from faithkit.metrics.claim_checkers import PRESETS, ClaimChecker
from faithkit.metrics.registry import METRICS
from tests.test_checker import checker_folders  # noqa: F401  (a fixture)

TRIPLES = [(0.7, 0.2, 0.1), (0.05, 0.9, 0.05), (0.2, 0.1, 0.7), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)]


def test_the_unfitted_reading_is_one_minus_p_unsupported():
    for triple in TRIPLES[:3]:
        assert Reading().faithful(triple) == pytest.approx(1 - triple[2], abs=1e-12)
    assert Reading().faithful(TRIPLES[3]) == pytest.approx(1, abs=1e-6)  # clipped, not a division by zero
    assert Reading().faithful(TRIPLES[4]) == pytest.approx(0, abs=1e-6)
    assert Reading((0.0, 1.0), 0.0).faithful((0.3, 0.1, 0.6)) == pytest.approx(0.75)  # P(S) / (P(S) + P(G))


def test_a_reading_is_stored_beside_the_adapter_and_read_back(tmp_path):
    assert Reading.load(tmp_path) == Reading()  # no reading.json: the unfitted reading
    fitted = Reading((1.5, 0.25), -0.5, 0.62, "rated dev (10 responses)", {"auroc": 0.8})
    fitted.save(tmp_path)
    assert Reading.load(tmp_path) == fitted
    (tmp_path / "reading.json").write_text(
        '{"features": ["a"], "coefficients": [1], "intercept": 0, "threshold": 0.5, "fitted_on": "x"}'
    )
    with pytest.raises(InputError, match="features must be not_unsupported, supported_vs_generic, one coefficient"):
        Reading.load(tmp_path)
    (tmp_path / "reading.json").write_text('{"features": []}')
    with pytest.raises(InputError, match="reading.json: coefficients is missing"):
        Reading.load(tmp_path)


def test_the_fit_recovers_a_known_reading_and_reports_its_figures():
    rng = random.Random(0)
    truth = Reading((1.2, 0.8), -0.3)
    triples, labels = [], []
    for _ in range(4000):
        raw = [rng.random() + 1e-3 for _ in range(3)]
        triple = [value / sum(raw) for value in raw]
        triples.append(triple)
        labels.append(int(rng.random() < truth.faithful(triple)))
    fitted = fit_reading(triples, labels, "simulated", l2=0.0)
    assert fitted.coefficients == pytest.approx(truth.coefficients, abs=0.15)
    assert fitted.intercept == pytest.approx(truth.intercept, abs=0.15)
    scores = [fitted.faithful(triple) for triple in triples]
    assert fitted.threshold == stats.best_balanced_threshold(scores, labels)
    assert fitted.figures["auroc"] == stats.auroc(scores, labels)
    assert fitted.figures["balanced_accuracy"] == stats.balanced_accuracy(scores, labels, fitted.threshold)
    assert fitted.figures["expected_calibration_error"] < 0.03  # a logistic fit of the true model is calibrated
    assert features((0.5, 0.25, 0.25)) == pytest.approx([math.log(3), math.log(2)]) and len(FEATURES) == 2


def test_expected_calibration_error_and_balanced_accuracy_by_hand():
    probabilities = [0.05, 0.15, 0.85, 0.95, 0.9, 1.0]
    labels = [0, 1, 1, 1, 0, 1]
    # bins [0, 0.1): 0.05 vs 0; [0.1, 0.2): 0.15 vs 1; [0.8, 0.9): 0.85 vs 1; [0.9, 1]: 0.95, 0.9, 1.0 vs 2/3
    expected = (0.05 + 0.85 + 0.15 + 3 * abs(2 / 3 - 0.95)) / 6
    assert stats.expected_calibration_error(probabilities, labels) == pytest.approx(expected)
    assert stats.balanced_accuracy(probabilities, labels, 0.5) == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert stats.best_balanced_threshold(probabilities, labels) == 0.95  # 3/4 and 2/2, the highest of the ties
    with pytest.raises(ValueError, match="probabilities in"):
        stats.expected_calibration_error([1.5], [1])
    assert np.isclose(stats.expected_calibration_error([0.3] * 10, [1] * 3 + [0] * 7), 0)


def test_the_metric_reads_the_adapters_reading(tmp_path, checker_folders):  # noqa: F811
    _, adapter = checker_folders
    folder = tmp_path / "adapter"
    shutil.copytree(adapter, folder)
    Reading((0.0, 1.0), 0.0, 0.7, "test").save(folder)
    metric = ClaimChecker("faithkit-checker", nli_model=str(folder), window=8, stride=6)
    row = metric.compute_rows(["Sam Phillips produced Elvis."], [[]], ["It was Sam Phillips."])[0]
    supported, generic = row["faithkit_checker_supported"], row["faithkit_checker_generic"]
    assert row["faithkit_checker"] == pytest.approx(supported / (supported + generic), abs=1e-6)
    assert row["faithkit_checker_verdict"] == float(row["faithkit_checker"] >= 0.7)


def test_one_preset_per_adapter_and_the_default_under_its_own_keys():
    default = PRESETS["faithkit-checker"]
    assert (
        faithkit_checker.ADAPTERS[default.adapter]
        == faithkit_checker.ADAPTER
        == faithkit_checker.ADAPTERS[faithkit_checker.DEFAULT_ADAPTER]
    )
    assert {name: PRESETS[name].adapter for name in ("faithkit-checker-smollm2", "faithkit-checker-gemma")} == {
        "faithkit-checker-smollm2": "smollm2",
        "faithkit-checker-gemma": "gemma",
    }
    for name in ("faithkit-checker", "faithkit-checker-smollm2", "faithkit-checker-gemma"):
        key = name.replace("-", "_")
        assert METRICS[name].score_keys == tuple(
            f"{key}{suffix}" for suffix in ("", "_verdict", "_supported", "_generic", "_hallucination")
        )
        assert PRESETS[name].directions == dict(zip(METRICS[name].score_keys, (True, True, True, None, False)))


def test_a_preset_whose_adapter_is_not_shipped_says_how_to_make_it(monkeypatch, tmp_path):
    monkeypatch.setitem(faithkit_checker.ADAPTERS, "gemma", tmp_path / "absent")
    with pytest.raises(ConfigError) as caught:
        ClaimChecker("faithkit-checker-gemma")
    assert str(caught.value) == (
        f"faithkit-checker-gemma: its adapter is not in {tmp_path / 'absent'} (it ships once trained); train it with "
        "'faithkit checker train --config configs/checker/gemma3.yaml' and copy the run's adapter/ folder there, or "
        "give --nli-model ADAPTER_FOLDER"
    )
