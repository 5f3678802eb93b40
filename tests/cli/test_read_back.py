"""Files faithkit reads back, edited by hand: one `error:` line naming the file, the field and what was expected.

A sweep's best.json comes back through ``--chosen`` (faithkit.data.schema's check); every edit below
once gave a traceback (KeyError, AttributeError, TypeError).
"""

from __future__ import annotations

import json

import pytest

from .helpers import write_jsonl

PICK = {
    "cell": "pmi alpha=0.5 top_p=0.9 greedy",
    "strategy": "pmi",
    "search": "greedy",
    "alpha": 0.5,
    "top_p": 0.9,
    "n": 3,
    "within_bounds": True,
}
FIX = "give the best.json of a finished sweep (or rerun that sweep to write it again)"


def _sweep(faithkit, tmp_path, chosen, *extra):
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "document": "d", "history": ["h"], "response": "r"}])
    return faithkit(
        "sweep", "--chosen", chosen, "--input", rows, "--out", tmp_path / "out", "--generator", "x",
        "--metrics", "lexical", "--faithfulness", "knowledge_precision", "--relevance", "token_f1", *extra,
    )  # fmt: skip


def _best(tmp_path, edit) -> str:
    best = {"by_strategy": {"pmi": dict(PICK)}}
    edit(best)
    path = tmp_path / "best.json"
    path.write_text(json.dumps(best))
    return str(path)


def _pop(key):
    return lambda best: best["by_strategy"]["pmi"].pop(key)


def _set(key, value):
    return lambda best: best["by_strategy"]["pmi"].__setitem__(key, value)


@pytest.mark.parametrize(
    "edit, message",
    [
        (_pop("alpha"), "by_strategy.pmi.alpha is missing (expected a number)"),
        (_pop("strategy"), "by_strategy.pmi.strategy is missing (expected text)"),
        (
            lambda best: best.__setitem__("by_strategy", []),
            "by_strategy is [] where an object of named entries is expected",
        ),
        (
            lambda best: best["by_strategy"].__setitem__("pmi", "pmi"),
            'by_strategy.pmi is "pmi" where an object is expected',
        ),
        (_set("alpha", "half"), 'by_strategy.pmi.alpha is "half" where a number is expected'),
        (_set("alpha", True), "by_strategy.pmi.alpha is true where a number is expected"),
        (
            _set("strategy", "warp"),
            "by_strategy.pmi.strategy is 'warp' where one of plain, pmi, cad, adacad, rerank, faithful is expected",
        ),
        (_set("alpha", 5), "by_strategy.pmi: pmi: alpha must be in [0, 1], got 5"),
        (_set("search", "warp"), "by_strategy.pmi: "),
        (lambda best: best.pop("by_strategy"), "by_strategy is missing (expected an object of named entries)"),
    ],
)
def test_a_hand_edited_best_json_is_one_line_naming_the_field(faithkit, tmp_path, edit, message):
    path = _best(tmp_path, edit)
    run = _sweep(faithkit, tmp_path, path)
    assert run.code == 2 and run.out == "", run.err
    assert run.err.count("\n") == 1 and "Traceback" not in run.err
    assert run.err.startswith(f"error: {path}: {message}") and run.err.rstrip().endswith(FIX)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ["[1, 2]", "{not json", ""])
def test_a_best_json_that_is_no_object_or_no_json_is_one_line(faithkit, tmp_path, text):
    path = tmp_path / "best.json"
    path.write_text(text)
    run = _sweep(faithkit, tmp_path, path)
    assert run.code == 2 and run.err.count("\n") == 1 and run.err.startswith(f"error: {path}")
    assert run.err.rstrip().endswith(FIX)


def test_a_best_json_with_a_bom_is_read(faithkit, tmp_path):
    from faithkit.sweep.config import chosen_entries

    path = tmp_path / "best.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"by_strategy": {"pmi": PICK}}).encode())
    assert chosen_entries(path) == [{"name": "pmi", "search": "greedy", "alpha": [0.5], "top_p": [0.9]}]


def test_a_best_json_that_chose_no_strategy_is_one_line(faithkit, tmp_path):
    """Issue 52, case 6: a sweep of plain decoding alone writes ``by_strategy: {}``; as --chosen it added nothing,
    without a word."""
    path = tmp_path / "best.json"
    path.write_text(json.dumps({"by_strategy": {}}))
    run = _sweep(faithkit, tmp_path, path)
    assert run.code == 2 and run.err == (
        f"error: {path}: by_strategy is empty: that sweep chose no strategy (it ran plain decoding alone), so it "
        "gives nothing to run again; give the best.json of a sweep that ran a strategy, or leave this one out\n"
    )


def test_chosen_with_alpha_runs_both_the_chosen_cell_and_the_grid(tmp_path):
    """--chosen plus --alpha: the chosen cell keeps its alpha and the flag's grid runs beside it (it once replaced
    the chosen alpha, so the chosen cell never ran)."""
    from faithkit.sweep import load_config

    path = tmp_path / "best.json"
    path.write_text(json.dumps({"by_strategy": {"pmi": PICK}}))
    settings = {"chosen": str(path), "alpha": "0.25", "top_p": "0.9", "input": "x", "out": "o", "generator": "x"}
    cells = load_config(None, settings).cells()
    pmi = sorted((cell.strategy.alpha, cell.strategy.top_p) for cell in cells if cell.strategy.name == "pmi")
    assert pmi == [(0.25, 0.9), (0.5, 0.9)]


def _grid(values: int) -> str:
    return ",".join(f"{(i + 1) / values:g}" for i in range(values))


def test_a_grid_over_max_cells_is_refused_before_any_work(faithkit, tmp_path):
    """10,000 cells (alpha x top_p, 100 values each) once created empty job files for thousands of cells and said
    nothing for minutes; now one line, before a model loads or a file is written."""
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "document": "d", "history": ["h"], "response": "r"}])
    argv = ["sweep", "--input", rows, "--out", tmp_path / "out", "--generator", "x"]
    run = faithkit(*argv, "--alpha", _grid(100), "--top-p", _grid(100))
    assert run.code == 2 and run.err == (
        "error: the grid has 10,001 cells, more than --max-cells 500 (each cell decodes every row and is judged on "
        "each): give fewer values (--alpha, --top-p, --strategies, --search), or --allow-large-grid to run it\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["rows.jsonl"]
    run = faithkit(*argv, "--alpha", _grid(5), "--top-p", _grid(5), "--max-cells", "20")
    assert run.code == 2 and run.err.startswith("error: the grid has 26 cells, more than --max-cells 20")


def test_a_large_grid_runs_when_allowed_and_is_counted_as_built():
    from faithkit.sweep import load_config

    settings = {"alpha": _grid(30), "top_p": _grid(20), "input": "x", "out": "o", "generator": "x"}
    config = load_config(None, {**settings, "allow_large_grid": True})
    assert config.grid_size() == len(config.cells()) == 601
    strategies = "plain,cad,pmi:alpha=0.5"
    config = load_config(None, {"strategies": strategies, "search": "greedy", **settings, "allow_large_grid": True})
    assert config.grid_size() >= len(config.cells())  # cells that decode alike are counted, then merged


BOM = b"\xef\xbb\xbf"


def test_a_bom_is_read_past_in_every_jsonl_faithkit_reads(faithkit, tmp_path):
    """Rows files took a BOM; candidates, score files and sidecars refused it (``Unexpected UTF-8 BOM``)."""
    from faithkit.data import read_results
    from faithkit.generation.rerank import read_candidates

    candidates = tmp_path / "candidates.jsonl"
    candidates.write_bytes(BOM + b'{"id": "1", "responses": ["a", "b"]}\n')
    assert read_candidates(candidates) == {"1": {"id": "1", "responses": ["a", "b"]}}
    scores = tmp_path / "scores.jsonl"
    scores.write_bytes(BOM + b'{"id": "1", "overlap_f1": 0.5}\n{"id": "2", "overlap_f1": 0.25}\n')
    assert read_results(scores) == [{"id": "1", "overlap_f1": 0.5}, {"id": "2", "overlap_f1": 0.25}]
    other = tmp_path / "other.jsonl"
    other.write_bytes(BOM + b'{"id": "1", "overlap_f1": 0.75}\n{"id": "2", "overlap_f1": 0.5}\n')
    run = faithkit(
        "meta-eval", "system-level", "--consistent-scores", other, "--inconsistent-scores", scores,
        "--samples", "2", "--repetitions", "10",
    )  # fmt: skip
    assert run.code == 0 and "| overlap_f1 |" in run.out, run.err


def test_a_lone_surrogate_in_a_candidate_is_that_rows_error_naming_the_field(tmp_path):
    """It reached the tokenizer as ``TextEncodeInput must be Union[...]``, naming no field."""
    from faithkit.data import Row
    from faithkit.decoding.generation_options import GenerationOptions
    from faithkit.decoding.rerank import Rerank
    from faithkit.generation.rerank import CandidatesJob, read_candidates

    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text('{"id": "1", "responses": ["fine", "bad \\ud800 text"]}\n{"id": "2", "responses": ["ok"]}\n')
    records = read_candidates(candidates)
    message = (
        f"{candidates}, line 1: field 'responses' item 2 holds text that is not valid Unicode (a lone surrogate such "
        "as \\ud800); fix that text"
    )
    assert records["1"] == {"id": "1", "error": message} and records["2"] == {"id": "2", "responses": ["ok"]}
    job = CandidatesJob("no-model-loads", Rerank(), GenerationOptions(), records)
    with pytest.raises(ValueError) as raised:
        job([Row(id="1", document="d")])
    assert str(raised.value) == message


def test_candidate_ids_that_no_row_has_are_counted_and_named(caplog):
    from faithkit.generation.rerank import report_missing_ids

    candidates = {key: {"id": key, "responses": ["a"]} for key in ("1", "x1", "x2", "x3", "x4")}
    with caplog.at_level("WARNING", logger="faithkit"):
        report_missing_ids(candidates, ["1", "2"], "cands.jsonl")
        report_missing_ids({"1": candidates["1"]}, ["1", "2"], "cands.jsonl")
    assert [record.getMessage() for record in caplog.records] == [
        "cands.jsonl: 4 of 5 candidates records have an id no row of --input has ('x1', 'x2', 'x3', …); they are "
        "not reranked"
    ]


@pytest.mark.parametrize(
    "yaml, message",
    [
        ("alpha: nan\n", "alpha nan is not a usable number; give a finite value"),
        ("dtype: int8\n", "dtype must be one of auto, float32, bfloat16, float16, got 'int8'"),
        ("top_p: [0.5, 2]\n", "top_p must be in (0, 1], got 2 (1 keeps every token)"),
    ],
)
def test_a_sweep_config_files_mistake_names_the_file(faithkit, tmp_path, yaml, message):
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml)
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "document": "d", "history": ["h"], "response": "r"}])
    run = faithkit("sweep", "--config", config, "--input", rows, "--out", tmp_path / "out", "--generator", "x")
    assert run.code == 2 and run.err == f"error: config file {config}: {message}\n"


# ---- every other file faithkit reads back: the same one line (faithkit.data.schema) -----------------------------------

CANDIDATES_FIX = 'write one object per line: {"id": "r1", "responses": ["...", "..."], "greedy": "..."}'


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"responses": ["a"]}', "line 1: id is missing (expected a row id (text or a whole number))"),
        ('{"id": "1", "responses": ["a", 2]}', "line 1: responses[1] is 2 where text is expected"),
        ('{"id": "1", "responses": ["a"], "greedy": null}', "line 1: greedy is null where text is expected"),
        ('{"id": "1", "responses": ["a"]', "line 1 is not JSON (Expecting ',' delimiter)"),
    ],
)
def test_a_hand_edited_candidates_file_is_one_line_naming_the_field(faithkit, model_folder, tmp_path, line, message):
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "1", "document": "d", "history": ["h"], "response": "r"}])
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(line + "\n")
    argv = ["--model", model_folder, "--input", rows, "--candidates", candidates, "--output", tmp_path / "out.jsonl"]
    run = faithkit("rerank", *argv)
    assert run.code == 2 and run.error_lines == [f"error: {candidates}, {message}; {CANDIDATES_FIX}"]


def test_a_hand_edited_checker_adapter_config_is_one_error_naming_the_field(tmp_path):
    from faithkit.errors import ConfigError
    from faithkit.metrics.faithkit_checker import load_checker

    (tmp_path / "adapter_config.json").write_text('{"base_model_name_or_path": 7}')
    with pytest.raises(ConfigError) as raised:
        load_checker(str(tmp_path))
    assert str(raised.value) == (
        f"{tmp_path / 'adapter_config.json'}: base_model_name_or_path is 7 where text is expected; give the folder "
        "peft's save_pretrained wrote (e.g. the adapter/ of 'faithkit checker train')"
    )


def test_a_hand_edited_training_run_state_is_one_error_naming_the_field(tmp_path):
    from faithkit.errors import ConfigError
    from faithkit.train.state import RunState
    from faithkit.train.state import RUN_STATE, load_state

    state = RunState().state_dict()
    (tmp_path / RUN_STATE).write_text(json.dumps({**state, "step": "ten"}))
    with pytest.raises(ConfigError) as raised:
        load_state(None, tmp_path, RunState())
    assert (
        str(raised.value)
        == f'{tmp_path / RUN_STATE}: step is "ten" where a whole number is expected; start the run again'
    )
    (tmp_path / RUN_STATE).write_text(json.dumps({**state, "evaluations": [{"loss": 1.0}]}))
    with pytest.raises(
        ConfigError, match=r"run_state.json: evaluations\[0\].step is missing \(expected a whole number\)"
    ):
        load_state(None, tmp_path, RunState())


def test_a_training_run_s_generations_log_with_a_bad_line_is_named(tmp_path):
    from types import SimpleNamespace

    from faithkit.errors import OutputError
    from faithkit.train.run_folder import RunLog

    samples = tmp_path / "generations.jsonl"
    samples.write_text('{"step": 1, "response": "a"}\n{"response": "b"}\n')
    with pytest.raises(OutputError) as raised:
        RunLog._drop_after(SimpleNamespace(csv=tmp_path / "none.csv", samples=samples), 1)
    assert str(raised.value) == (
        f"{samples}, line 2: step is missing (expected a whole number); delete that line, or start the run again "
        "in another --output-dir"
    )


def test_a_checker_run_folder_s_recorded_recipe_is_read_with_the_schema(tmp_path):
    from faithkit.checker.training import CheckerTraining, _own_run_folder
    from faithkit.errors import ConfigError

    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "config.json").write_text('["not", "a", "recipe"]')
    with pytest.raises(ConfigError) as raised:
        _own_run_folder(tmp_path, CheckerTraining())
    assert str(raised.value) == (
        f'{tmp_path / "config.json"}: the top level is ["not", "a", "recipe"] where an object is expected; give '
        "another --output, or delete the folder to start the run again"
    )


def test_hand_edited_judge_weights_are_one_error_naming_the_field(tmp_path):
    from faithkit.errors import InputError
    from faithkit.metrics.faith_judge import WEIGHTS, JudgeWeights

    weights = json.loads(WEIGHTS.read_text())
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({**weights, "coefficients": [1.0, "x"]}))
    with pytest.raises(InputError) as raised:
        JudgeWeights.load(path)
    assert str(raised.value) == (
        f'{path}: coefficients[1] is "x" where a number is expected; refit the judge (benchmarks/judge_fit.py) or '
        "give the weights file it wrote"
    )
