"""The metric registry's measures: the one vocabulary sweeps tabulate, plot and choose by."""

import pytest

from faithkit.errors import ConfigError

from faithkit.metrics.corpus import AGGREGATES
from faithkit.metrics.lexical import ResponseForm
from faithkit.metrics.registry import MEASURES, METRICS, load_metric, metric_fingerprint


def test_every_measure_is_named_once_and_aggregates_a_score_of_its_metric():
    measures = [measure for spec in METRICS.values() for measure in spec.measures]
    assert len({m.name for m in measures}) == len(measures) == len(MEASURES)
    for spec in METRICS.values():
        for measure in spec.measures:
            assert measure.aggregate in AGGREGATES and measure.title
            assert measure.key in spec.score_keys or (spec.name, measure.key) == ("pmi-faith", "logp_history")
    assert MEASURES["fluency"][0].name == "pmi-faith" and MEASURES["empty"][1].higher_is_better is False


def test_every_score_key_is_written_by_one_metric_only():
    """A merged table (``faithkit score --metric a,b``, meta-eval, a sweep) holds each metric's keys side by side: a key
    two metrics wrote would hold one metric's values under the other's name."""
    writers: dict[str, list[str]] = {}
    for spec in METRICS.values():
        for key in spec.score_keys:
            writers.setdefault(key, []).append(spec.name)
    assert {key: names for key, names in writers.items() if len(names) > 1} == {}
    assert writers["bleu"] == ["lexical"] and writers["document_bleu"] == ["document-bleu"]
    assert writers["pmi"] == ["pmi-faith"]


def test_each_metric_class_declares_the_score_keys_the_registry_lists():
    """Classes that declare their keys on the class (the claim checkers and the baselines set them per preset or kind)."""
    declared = {name: vars(spec.build.target()).get("score_keys") for name, spec in METRICS.items()}
    assert {
        name: keys for name, keys in declared.items() if keys is not None and keys != METRICS[name].score_keys
    } == {}
    assert len([keys for keys in declared.values() if keys is not None]) == 8
    assert load_metric("document-bleu").score_keys == METRICS["document-bleu"].score_keys


def test_response_form_measures():
    rows = load_metric("form").compute_rows(["d"] * 3, None, ["no no no, I said", "", "It is 330 metres tall."])
    assert rows == [
        {"words": 5, "empty": 0.0, "repeated": 1.0},
        {"words": 0, "empty": 1.0, "repeated": 0.0},
        {"words": 5, "empty": 0.0, "repeated": 0.0},
    ]
    assert isinstance(load_metric("form"), ResponseForm)


def test_a_metric_fingerprint_holds_the_settings_that_change_a_score():
    given = {"normalize": "mean", "unconditional": False, "device": "cpu", "batch_size": 4, "model": "smollm2-135m"}
    fingerprint = metric_fingerprint("pmi-faith", given)
    assert fingerprint["metric"] == "pmi-faith"
    assert sorted(fingerprint["metric_options"]) == ["model", "unconditional"]  # mean is the default
    assert fingerprint["metric_options"]["unconditional"] is False
    assert fingerprint["metric_options"]["model"]["name"] == "smollm2-135m"
    assert metric_fingerprint("lexical", {}) == {"metric": "lexical", "metric_options": {}}


def test_the_metric_bleu_against_the_document_is_document_bleu_and_bleu_names_no_metric():
    from faithkit.metrics.registry import get_spec

    assert "bleu" not in METRICS
    with pytest.raises(ConfigError, match=r"^unknown metric 'bleu'; choose one of .*document-bleu"):
        get_spec("bleu")
    assert [measure.name for measure in METRICS["document-bleu"].measures] == ["document_bleu"]
    assert metric_fingerprint("document-bleu", {})["metric"] == "document-bleu"


def test_a_metric_runs_on_a_device_when_it_takes_one():
    assert METRICS["pmi-faith"].runs_on_device and METRICS["q2"].runs_on_device and METRICS["llm-judge"].runs_on_device
    assert not METRICS["lexical"].runs_on_device and not METRICS["document-bleu"].runs_on_device


def test_every_key_declares_its_direction_once_and_metrics_that_share_a_key_agree():
    from faithkit.metrics.registry import score_direction

    seen: dict[str, bool | None] = {}
    for spec in METRICS.values():
        keys = {*spec.score_keys, *(measure.key for measure in spec.measures)}
        assert set(spec.directions) == keys, spec.name
        assert all(direction in (True, False, None) for direction in spec.directions.values())
        key, sign = spec.ranking_key  # every metric can judge: it has a key with a direction
        assert spec.directions[key] is (sign == 1) and key in spec.score_keys
        for measure in spec.measures:
            assert measure.higher_is_better is spec.directions[measure.key]
        for key, direction in spec.directions.items():
            assert seen.setdefault(key, direction) is direction, key
            assert score_direction(f"{spec.name}:{key}") is direction
    assert score_direction("faithkit_checker_hallucination") is False  # lower P(unsupported): more faithful
    assert score_direction("faithkit_checker") is True and score_direction("words") is None
    assert score_direction("contrast_pmi_margin") is False and score_direction("not_a_key") is None
    assert METRICS["faithkit-checker"].ranking_key == ("faithkit_checker", 1)


def test_a_metric_without_a_direction_for_a_key_is_refused_and_a_lower_only_one_ranks_low_first():
    from faithkit.metrics.registry import Measure, MetricSpec

    with pytest.raises(ValueError, match=r"metric 'x': directions must name each .* \(missing: b; not a key: c\)"):
        MetricSpec("x", None, ("a", "b"), directions={"a": True, "c": False})
    with pytest.raises(ValueError, match=r"missing: m"):
        MetricSpec("x", None, ("a",), measures=(Measure("x_m", "m", "m"),), directions={"a": True})
    lower = MetricSpec("x", None, ("words", "unsupported"), directions={"words": None, "unsupported": False})
    assert lower.ranking_key == ("unsupported", -1)
