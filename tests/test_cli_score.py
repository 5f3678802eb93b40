"""`faithkit score` end to end with a small saved model: output, bad rows, resume, help, clear errors."""

import json

import pytest

from faithkit.cli import build_parser, main
from faithkit.data import read_results


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory, tiny_gpt2, gpt2_tokenizer):
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tiny_gpt2.save_pretrained(folder)
    gpt2_tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture()
def rows_file(tmp_path):
    rows = [
        {"id": f"r{i}", "knowledge": f"Fact number {i} is about {'long ' * i}things.", "message": f"Tell me fact {i}.",
         "response": f"Fact {i} is about things."}
        for i in range(7)
    ]
    rows[3]["response"] = ""
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score(model_folder, rows_file, output, *extra):
    return main(["score", "--metric", "pmi-faith", "--model", model_folder, "--input", str(rows_file),
                 "--output", str(output), "--batch-size", "3", "--chunk-size", "2", *extra])


def test_scores_every_row_and_reports_bad_ones(model_folder, rows_file, tmp_path, capsys):
    output = tmp_path / "scores.jsonl"
    assert _score(model_folder, rows_file, output) == 0
    records = {r["id"]: r for r in read_results(output)}
    assert sorted(records) == [f"r{i}" for i in range(7)]
    assert records["r3"] == {"id": "r3", "error": "row r3: field 'response' (response) is empty"}
    assert all(isinstance(records[f"r{i}"]["pmi"], float) for i in (0, 1, 2, 4, 5, 6))
    assert records["r0"]["history"] == ["Tell me fact 0."] and records["r0"]["document"].startswith("Fact number 0")
    printed = capsys.readouterr()
    assert "| id | pmi | uncond_pmi | response | error |" in printed.out
    assert "6 scored, 0 already done, 1 errors" in printed.err


def test_a_file_without_history_scores_with_empty_histories_and_a_warning(model_folder, tmp_path, capsys):
    rows = tmp_path / "rows.csv"
    rows.write_text("document,response\nThe sky is blue.,It is blue.\n")
    output = tmp_path / "scores.jsonl"
    with pytest.warns(UserWarning, match="no history column found"):
        assert main(["score", "--metric", "pmi-faith", "--model", model_folder, "--input", str(rows),
                     "--output", str(output)]) == 0
    [record] = read_results(output)
    assert record["history"] == [] and isinstance(record["pmi"], float)


def test_an_over_long_document_keeps_its_end_and_the_warning_names_the_row(model_folder, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"id": "long-one", "document": "word " * 400 + "The end.", "history": "h",
                                "response": "The end."}) + "\n")
    output = tmp_path / "scores.jsonl"
    assert main(["score", "--metric", "pmi-faith", "--model", model_folder, "--input", str(rows),
                 "--output", str(output)]) == 0
    [record] = read_results(output)
    assert record["truncated_tokens"] > 150  # 256 positions in the tiny model
    assert f"row long-one: context cut by {record['truncated_tokens']} tokens" in capsys.readouterr().err


def test_rerun_after_a_crash_neither_repeats_nor_loses_rows(model_folder, rows_file, tmp_path):
    complete = tmp_path / "complete.jsonl"
    _score(model_folder, rows_file, complete)
    crashed = tmp_path / "crashed.jsonl"
    lines = complete.read_text().splitlines(keepends=True)
    crashed.write_text("".join(lines[:3]) + lines[3][:20])  # three rows landed, the fourth was half-written
    assert _score(model_folder, rows_file, crashed) == 0
    resumed = read_results(crashed)
    assert [r["id"] for r in resumed] == [r["id"] for r in read_results(complete)]
    for a, b in zip(resumed, read_results(complete)):
        if "pmi" in a:
            assert a["pmi"] == pytest.approx(b["pmi"], abs=1e-4)


def test_missing_input_and_unknown_model_fail_with_one_line(model_folder, tmp_path, capsys):
    assert main(["score", "--model", model_folder, "--input", str(tmp_path / "nope.jsonl"),
                 "--output", str(tmp_path / "o.jsonl")]) == 2
    assert "error: input file not found" in capsys.readouterr().err
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"document": "d", "history": "h", "response": "r"}) + "\n")
    assert main(["score", "--model", "no-such-org/no-such-model", "--input", str(rows),
                 "--output", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Model 'no-such-org/no-such-model' is not available" in err and "Traceback" not in err


def test_options_that_do_not_apply_are_refused(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"document": "d", "history": "h", "response": "r"}) + "\n")
    with pytest.raises(SystemExit, match="--model do not apply to --metric overlap-f1"):
        main(["score", "--metric", "overlap-f1", "--model", "x", "--input", str(rows), "--output", str(tmp_path / "o")])


@pytest.mark.parametrize("command", [[], ["score"], ["meta-eval"], ["meta-eval", "begin"], ["explain"]])
def test_help_is_complete(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: faithkit") and "--help" in text
