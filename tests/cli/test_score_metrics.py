"""`faithkit score --metric a,b,c`: one output with every metric's fields, each metric's model loaded once, each
metric resumed on its own (faithkit/metrics/scores.py)."""

import pytest

from faithkit.serving import models
from faithkit.data import Row, read_results
from faithkit.metrics.pmi_faith import PMIFaith
from faithkit.metrics.scores import merged_records, metric_store

from .helpers import write_jsonl

ROWS = [
    {
        "id": f"r{i}",
        "document": f"Fact {i} is about red apples and {'long ' * i}things.",
        "response": f"Fact {i} is red.",
    }
    for i in range(6)
]
ROWS[4]["response"] = ""  # an error row under every metric


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


@pytest.fixture
def loads(monkeypatch):
    """The models loaded, by name, in this test."""
    loaded = []
    real = models.load

    def counted(name, *args, **kwargs):
        loaded.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(models, "load", counted)
    return loaded


def _score(faithkit, rows, output, metrics, *extra):
    return faithkit("score", "--metric", metrics, "--input", rows, "--output", output, "--chunk-size", "2", *extra)


def test_the_output_holds_each_metrics_record_as_a_run_of_that_metric_alone_writes_it(
    faithkit, model_folder, rows, tmp_path, loads
):
    out = tmp_path / "all.jsonl"
    run = _score(faithkit, rows, out, "pmi-faith,overlap-f1,form", "--model", model_folder)
    assert run.code == 0, run.err
    assert loads == [model_folder]  # pmi-faith's model, once
    alone = {}
    for metric, extra in (("pmi-faith", ["--model", model_folder]), ("overlap-f1", []), ("form", [])):
        assert _score(faithkit, rows, tmp_path / f"{metric}.jsonl", metric, *extra).code == 0
        alone[metric] = read_results(tmp_path / f"{metric}.jsonl")
    merged = read_results(out)
    assert [r["id"] for r in merged] == [row["id"] for row in ROWS]
    for i, record in enumerate(merged):
        if i == 4:
            continue
        assert record == {**alone["pmi-faith"][i], **alone["overlap-f1"][i], **alone["form"][i]}
        assert list(record)[:4] == ["id", "document", "history", "response"] and list(record)[-1] == "row_digest"
    message = "row r4: field 'response' (response) is empty"
    assert merged[4]["error"] == f"pmi-faith: {message}; overlap-f1: {message}; form: {message}"
    assert "| id | pmi | uncond_pmi | overlap_f1 | words | empty | repeated | response | error |" in run.out
    for metric in ("pmi-faith", "overlap-f1", "form"):
        assert f"{metric}: 5 scored, 0 already done, 1 errors -> {out}" in run.err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("all")) == [
        "all.jsonl",
        "all.jsonl.meta.json",
        "all.jsonl.metrics",
        "all.jsonl.provenance.json",
    ]


def test_metrics_reading_one_lm_load_it_once_and_score_as_they_do_alone(faithkit, model_folder, rows, tmp_path, loads):
    out = tmp_path / "out.jsonl"
    run = _score(faithkit, rows, out, "pmi-faith,faith-judge", "--model", model_folder)
    assert run.code == 0, run.err
    assert loads == [model_folder]  # one load for both
    merged = read_results(out)
    for metric, keys in (("pmi-faith", ("pmi", "uncond_pmi")), ("faith-judge", ("faith_judge",))):
        alone = tmp_path / f"{metric}.jsonl"
        assert _score(faithkit, rows, alone, metric, "--model", model_folder).code == 0
        expected = read_results(alone)
        for i, record in enumerate(merged):
            assert {key: record.get(key) for key in keys} == {key: expected[i].get(key) for key in keys}
    assert loads == [model_folder] * 3  # and a metric alone loads its own


def test_a_metric_added_to_the_list_scores_only_itself_and_loads_no_other_model(
    faithkit, model_folder, rows, tmp_path, loads
):
    out = tmp_path / "out.jsonl"
    assert _score(faithkit, rows, out, "overlap-f1,pmi-faith", "--model", model_folder).code == 0
    loads.clear()
    run = _score(faithkit, rows, out, "overlap-f1,pmi-faith,form", "--model", model_folder)
    assert run.code == 0, run.err
    assert loads == []  # pmi-faith had nothing left to score
    for metric in ("overlap-f1", "pmi-faith"):  # the error row is tried again, and fails again
        assert f"{metric}: 0 scored, 5 already done, 1 errors" in run.err
    assert "form: 5 scored, 0 already done, 1 errors" in run.err
    assert {"overlap_f1", "pmi", "words"} <= read_results(out)[0].keys()


def test_an_interrupted_run_resumes_the_metric_it_was_in(faithkit, model_folder, rows, tmp_path, monkeypatch, loads):
    out = tmp_path / "out.jsonl"
    calls = []
    real = PMIFaith.compute_rows

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(PMIFaith, "compute_rows", interrupted)
    run = _score(faithkit, rows, out, "overlap-f1,pmi-faith", "--model", model_folder)
    assert run.code == 130 and not out.exists()
    assert len(read_results(metric_store(out, "pmi-faith"))) == 3  # the error row, then one chunk of two
    run = _score(faithkit, rows, out, "overlap-f1,pmi-faith", "--model", model_folder)
    assert run.code == 0, run.err
    assert "overlap-f1: 0 scored, 5 already done, 1 errors" in run.err
    assert "pmi-faith: 3 scored, 2 already done, 1 errors" in run.err
    assert all("pmi" in r and "overlap_f1" in r for r in read_results(out) if r["id"] != "r4")


def test_a_changed_setting_stops_with_what_differs_and_the_others_stay(faithkit, model_folder, rows, tmp_path):
    out = tmp_path / "out.jsonl"
    assert _score(faithkit, rows, out, "overlap-f1,pmi-faith", "--model", model_folder).code == 0
    before = out.read_text()
    run = _score(faithkit, rows, out, "overlap-f1,pmi-faith", "--model", model_folder, "--normalize", "sum")
    store = metric_store(out, "pmi-faith")
    assert run.code == 2 and run.error_lines == [
        f'error: {store} was written by a different job (metric_options.normalize: null then, "sum" now); to '
        "continue it, rerun with its settings; otherwise rerun with --restart to start it over, or choose another "
        "--output"
    ]
    assert out.read_text() == before


def test_an_output_of_one_metric_is_not_replaced_without_restart(faithkit, rows, tmp_path):
    out = tmp_path / "out.jsonl"
    assert _score(faithkit, rows, out, "overlap-f1").code == 0
    before = out.read_text()
    run = _score(faithkit, rows, out, "overlap-f1,form")
    assert run.code == 2 and run.error_lines == [
        f"error: {out} was written by a different job (one metric's, not several metrics'); to keep it, choose "
        "another --output; otherwise rerun with --restart to start it over"
    ]
    assert out.read_text() == before
    assert _score(faithkit, rows, out, "overlap-f1,form", "--restart").code == 0
    assert {"overlap_f1", "words"} <= read_results(out)[0].keys()


def test_a_flag_no_listed_metric_takes_is_refused(faithkit, rows, tmp_path):
    run = _score(faithkit, rows, tmp_path / "out.jsonl", "overlap-f1,form", "--normalize", "sum")
    assert run.code == 2
    assert run.error_lines == ["error: --normalize apply to none of --metric overlap-f1,form; drop them"]
    run = _score(faithkit, rows, tmp_path / "out.jsonl", "form", "--normalize", "sum")
    assert run.error_lines == ["error: --normalize do not apply to --metric form; drop them"]


def test_fields_two_metrics_write_are_named_by_metric_and_score_keys_keep_their_names():
    row = Row("a", "The document.", [], "The response.")
    stores = {
        "pmi-faith": [{"id": "a", "document": "The document.", "pmi": 1.5, "tokens": ["x"], "row_digest": "d"}],
        "faith-judge": [{"id": "a", "faith_judge": 0.9, "pmi": 1.5, "tokens": ["y"], "signal_pmi": 1.5}],
        "form": [{"id": "a", "error": "row a: broken"}],
    }
    [record] = merged_records([row], stores)
    assert record == {
        "id": "a",
        "document": "The document.",
        "history": [],
        "response": "The response.",
        "pmi": 1.5,
        "pmi-faith:tokens": ["x"],
        "faith_judge": 0.9,
        "faith-judge:pmi": 1.5,
        "faith-judge:tokens": ["y"],
        "signal_pmi": 1.5,
        "error": "form: row a: broken",
        "row_digest": row.digest(),
    }
