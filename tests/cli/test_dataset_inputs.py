"""`faithkit data export --format` then `faithkit score --input` on each format: the same records as the JSONL route."""

from pathlib import Path

import pytest

from faithkit.data import read_results

FAITHDIAL = Path(__file__).resolve().parents[1] / "data" / "corpora" / "faithdial"


def test_parquet_and_saved_dataset_inputs_score_as_jsonl(faithkit, model_folder, tmp_path):
    outputs = {"jsonl": "rows.jsonl", "parquet": "rows.parquet", "arrow": "rows"}
    for file_format, name in outputs.items():
        run = faithkit(
            "data",
            "export",
            "faithdial",
            "--split",
            "valid",
            "--path",
            FAITHDIAL,
            "--format",
            file_format,
            "--output",
            tmp_path / name,
        )
        assert run.code == 0, run.err
    scores = {}
    for file_format, name in outputs.items():
        output = tmp_path / f"scores_{file_format}.jsonl"
        run = faithkit(
            "score", "--metric", "pmi-faith", "--model", model_folder, "--input", tmp_path / name, "--output", output
        )
        assert run.code == 0, run.err
        scores[file_format] = read_results(output)
    assert [record["id"] for record in scores["jsonl"]] == ["0:0", "0:1", "1:0"]
    assert scores["parquet"] == scores["jsonl"] and scores["arrow"] == scores["jsonl"]


@pytest.mark.parametrize(
    "argv, parquet, message",
    [
        (
            ["--input", "hf:McGill-NLP/FaithDial"],
            False,
            "error: hub dataset McGill-NLP/FaithDial: name the split with --split (e.g. --split test)",
        ),
        (["--input", "rows.parquet"], False, "error: faithkit score: argument --input: file not found: rows.parquet"),
        (
            ["--input", "rows.parquet", "--split", "test"],
            True,
            "error: rows.parquet is a single split already; drop --split (it applies to hub datasets and saved DatasetDict "
            "folders)",
        ),
    ],
)
def test_dataset_input_mistakes_are_one_error_line(faithkit, tmp_path, argv, parquet, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if parquet:
        from datasets import Dataset

        Dataset.from_list([{"id": "r1", "document": "Sky.", "history": ["Q?"], "response": "Blue."}]).to_parquet(
            str(tmp_path / "rows.parquet")
        )
    run = faithkit("score", "--metric", "overlap-f1", "--output", "out.jsonl", *argv)
    assert run.code == 2 and run.error_lines == [message]
