"""The error contract: every bad input a user can make is ONE `error: …` line on stderr and exit status 2.

Mistakes argparse catches (an unknown choice, a count below 1, a path that cannot be what its
option needs) are the same one line, `error: faithkit COMMAND: argument --FLAG: …`, without
argparse's usage block. No traceback, ever, and nothing is written before the input and
settings are known to be good.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from faithkit.data import read_results

from .helpers import subprocess_env, write_jsonl

ROWS = [{"id": "1", "document": "The sky is blue.", "history": "What colour is the sky?", "response": "It is blue."}]


@pytest.fixture()
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


def _assert_one_error_line(run, expected: str, output: Path | None = None):
    assert run.code == 2, run.err
    assert "Traceback" not in run.err and run.out == ""
    assert run.error_lines == [run.error_lines[0]] and run.err.strip() == run.error_lines[0]
    assert run.error_lines[0].startswith(f"error: {expected}"), run.error_lines[0]
    if output is not None:
        assert not output.exists()  # refused before anything was written


def test_missing_input_file(faithkit, tmp_path):
    missing, out = tmp_path / "nope.jsonl", tmp_path / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", missing, "--output", out)
    _assert_one_error_line(run, f"faithkit score: argument --input: file not found: {missing}", out)


def test_input_that_is_a_folder_or_of_an_unknown_type(faithkit, tmp_path):
    out = tmp_path / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", tmp_path, "--output", out)
    _assert_one_error_line(
        run,
        f"faithkit score: argument --input: {tmp_path} is a folder; give a rows file "
        f"(.jsonl, .csv, .tsv or .parquet) or saved dataset",
        out,
    )
    (tmp_path / "rows.txt").write_text("document response\n")
    run = faithkit("score", "--metric", "overlap-f1", "--input", tmp_path / "rows.txt", "--output", out)
    _assert_one_error_line(
        run, f"{tmp_path / 'rows.txt'}: unknown file type '.txt'; use .jsonl, .csv, .tsv or .parquet", out
    )


def test_empty_input(faithkit, tmp_path):
    empty, out = tmp_path / "empty.jsonl", tmp_path / "o.jsonl"
    empty.write_text("\n")
    run = faithkit("score", "--metric", "overlap-f1", "--input", empty, "--output", out)
    _assert_one_error_line(run, f"{empty} has no data rows", out)


def test_missing_column_names_the_field_and_the_flag(faithkit, tmp_path):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", [{"document": "D", "answer": "R"}]), tmp_path / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out)
    _assert_one_error_line(
        run,
        f"{rows}: no column for 'response'; looked for ['response', 'generated_response', "
        "'prediction', 'hypothesis'] among ['document', 'answer']. Name it with "
        "--response-column.",
        out,
    )
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out, "--response-column", "reply")
    _assert_one_error_line(
        run, f"{rows}: column 'reply' (given for response) not found; columns are ['document', 'answer']", out
    )
    assert (
        faithkit(
            "score", "--metric", "overlap-f1", "--input", rows, "--output", out, "--response-column", "answer"
        ).code
        == 0
    )


def test_duplicate_ids(faithkit, tmp_path):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS * 2), tmp_path / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out)
    _assert_one_error_line(run, "row id '1' appears twice, on lines 1 and 2; ids must be unique", out)


def test_unknown_metric_is_argparses_error(faithkit, rows, tmp_path):
    run = faithkit("score", "--metric", "no-such-metric", "--input", rows, "--output", tmp_path / "o.jsonl")
    _assert_one_error_line(
        run,
        "faithkit score: argument --metric: must be one of pmi-faith, minimal-edit, faith-judge, q2",
    )


def test_options_the_metric_does_not_take(faithkit, rows, tmp_path):
    out = tmp_path / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--model", "x", "--input", rows, "--output", out)
    _assert_one_error_line(run, "--model do not apply to --metric overlap-f1; drop them", out)


@pytest.mark.parametrize("command", ["score", "generate"])
def test_unknown_model(faithkit, rows, tmp_path, command):
    metric = ["--metric", "pmi-faith"] if command == "score" else []
    run = faithkit(
        command, *metric, "--model", "no-such-org/no-such-model", "--input", rows, "--output", tmp_path / "o.jsonl"
    )
    role = "pmi-faith --model" if command == "score" else "--model"
    _assert_one_error_line(
        run,
        f"{role} 'no-such-org/no-such-model' is not an offline name (smollm2-135m, gemma3-270m), a local folder or "
        "in the Hugging Face cache, and HF_HUB_OFFLINE is set, so the hub was not asked",
    )
    assert "HF_HUB_OFFLINE=1 makes faithkit and transformers read only local folders" in run.err


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--alpha", "2"],
            "faithkit generate: argument --alpha: must be in [0, 1], got 2 (0 = plain decoding, 1 = rank by PMI alone)",
        ),
        (
            ["--alpha", "-0.1"],
            "faithkit generate: argument --alpha: must be in [0, 1], got -0.1 (0 = plain decoding, 1 = rank by PMI alone)",
        ),
        (["--top-p", "0"], "faithkit generate: argument --top-p: must be in (0, 1], got 0 (1 keeps every token)"),
        (["--strategy", "cad", "--top-p", "0.5"], "--top-p does not apply to --strategy cad"),
        (["--seed", "1"], "--seed applies to sampling only: add --do-sample, or drop them"),
        (["--num-return-sequences", "2"], "--num-return-sequences 2 is more than --num-beams 1"),
        (["--do-sample", "--num-beams", "2"], "strategy pmi does not support beam_sample search"),
        (["--num-beams", "0"], "faithkit generate: argument --num-beams: must be at least 1, got 0"),
        (["--batch-size", "0"], "faithkit generate: argument --batch-size: must be at least 1, got 0"),
    ],
)
def test_bad_decoding_settings(faithkit, rows, tmp_path, flags, message):
    # checked before the model loads: a model name that does not exist is never reached
    out = tmp_path / "o.jsonl"
    run = faithkit("generate", "--model", "no-such-org/no-such-model", "--input", rows, "--output", out, *flags)
    _assert_one_error_line(run, message, out)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["generate", "--model", "m", "--num-beams", "two"],
            "faithkit generate: argument --num-beams: expected a whole number, got 'two'",
        ),
        (
            ["generate", "--model", "m", "--chunk-size", "0"],
            "faithkit generate: argument --chunk-size: must be at least 1, got 0",
        ),
        (
            ["score", "--metric", "pmi-faith", "--batch-size", "0"],
            "faithkit score: argument --batch-size: must be at least 1, got 0",
        ),
        (["score", "--chunk-size", "0"], "faithkit score: argument --chunk-size: must be at least 1, got 0"),
        (
            ["score", "--chunk-size", "many"],
            "faithkit score: argument --chunk-size: expected a whole number, got 'many'",
        ),
    ],
)
def test_bad_values_are_one_line_without_the_usage_block(faithkit, rows, tmp_path, argv, message):
    out = tmp_path / "o.jsonl"
    run = faithkit(*argv, "--input", rows, "--output", out)
    _assert_one_error_line(run, message, out)


def test_output_whose_folder_is_a_regular_file(faithkit, rows, tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    out = blocker / "sub" / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out)
    _assert_one_error_line(
        run, f"faithkit score: argument --output: cannot write {out}: {blocker} is a file, not a folder"
    )
    assert blocker.read_text() == "not a folder"


def test_output_that_is_a_folder(faithkit, rows, tmp_path):
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", tmp_path)
    _assert_one_error_line(run, f"faithkit score: argument --output: {tmp_path} is a folder; give a file name")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc refuses new files on Linux, even to root")
def test_output_location_that_refuses_new_files(faithkit, rows):
    # stands for a read-only folder: permission bits do not stop root, /proc stops everyone
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", "/proc/faithkit-scores.jsonl")
    _assert_one_error_line(
        run, "faithkit score: argument --output: cannot write /proc/faithkit-scores.jsonl: /proc refuses new files ("
    )


def test_a_missing_output_folder_is_created(faithkit, rows, tmp_path):
    out = tmp_path / "new" / "deeper" / "o.jsonl"
    run = faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out)
    assert run.code == 0 and run.error_lines == []
    assert [r["id"] for r in read_results(out)] == ["1"]
    assert json.loads(Path(f"{out}.meta.json").read_text())["metric"] == "overlap-f1"


def test_system_level_without_scores(faithkit, tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "1", "q2": 0.5}\n')
    run = faithkit("meta-eval", "system-level", "--consistent-scores", tmp_path / "c.jsonl")
    _assert_one_error_line(
        run, "no scores given: pass --scores DIR, or both --consistent-scores and --inconsistent-scores"
    )


def test_explain_of_a_missing_file(faithkit, tmp_path):
    run = faithkit("explain", "--input", tmp_path / "nope.jsonl", "--html", tmp_path / "r.html")
    _assert_one_error_line(
        run, f"faithkit explain: argument --input: file not found: {tmp_path / 'nope.jsonl'}", tmp_path / "r.html"
    )


HEAVY = ["accelerate", "datasets", "scipy", "torch", "transformers"]
HEAVY_AFTER_MAIN = f"""
import sys
from faithkit.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as stop:
    status = stop.code
print(status, sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r})))
"""


@pytest.mark.parametrize(
    "argv, status",
    [
        (["score", "--metric", "overlap-f1", "--input", "nope.jsonl", "--output", "o.jsonl"], 2),
        (["meta-eval", "q2-wow", "--help"], 0),
    ],
    ids=["mistake", "help"],
)
def test_a_mistake_or_a_commands_help_is_answered_before_torch_or_transformers_load(tmp_path, argv, status):
    """Under `accelerate launch` every process meets a mistake: none of them waits for torch to say it."""
    run = subprocess.run(
        [sys.executable, "-c", HEAVY_AFTER_MAIN, *argv],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.stdout.splitlines()[-1] == f"{status} []", run.stderr


@pytest.mark.parametrize("rank, main", [(None, True), ("0", True), ("1", False)])
def test_the_main_process_is_rank_0_of_accelerate_launch(monkeypatch, rank, main):
    from faithkit.data.jobs import is_main_process

    if rank is None:
        monkeypatch.delenv("RANK", raising=False)
    else:
        monkeypatch.setenv("RANK", rank)
    assert is_main_process() is main
