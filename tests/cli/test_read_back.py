"""Files faithkit reads back, edited by hand: one `error:` line naming the file, the field and what was expected.

A sweep's best.json comes back through ``--chosen`` (faithkit.schema's check); every edit below
once gave a traceback (KeyError, AttributeError, TypeError).
"""

from __future__ import annotations

import json

import pytest

from .helpers import write_jsonl

PICK = {
    "cell": "pmi alpha=0.5 top_p=0.9 greedy",
    "strategy": "pmi",
    "decoding": "greedy",
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
            "by_strategy.pmi.strategy is 'warp' where one of plain, pmi, cad, adacad, rerank is expected",
        ),
        (_set("alpha", 5), "by_strategy.pmi: pmi: alpha must be in [0, 1], got 5"),
        (_set("decoding", "warp"), "by_strategy.pmi: "),
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
    assert chosen_entries(path) == [{"name": "pmi", "decoding": "greedy", "alpha": [0.5], "top_p": [0.9]}]


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
        "each): give fewer values (--alpha, --top-p, --strategies, --decoding), or --allow-large-grid to run it\n"
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
    config = load_config(None, {"strategies": strategies, "decoding": "greedy", **settings, "allow_large_grid": True})
    assert config.grid_size() >= len(config.cells())  # cells that decode alike are counted, then merged
