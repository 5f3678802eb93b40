"""Long jobs through the command line: which outputs a rerun may resume, error records, the lock, damaged files.

Each refusal is one `error: …` line naming what is wrong and the fix, and leaves the output
as it was.
"""

import json
from pathlib import Path

import pytest
from filelock import FileLock

from faithkit.data import ResultWriter, read_results

from .helpers import write_jsonl

ROWS = [
    {"id": f"r{i}", "document": f"Apples number {i} grow on trees.", "history": "hi", "response": f"apples {i} grow"}
    for i in range(6)
]
RESTART_HINT = "rerun with --restart to start it over, or choose another --output"


@pytest.fixture()
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


@pytest.fixture()
def scored(faithkit, rows, tmp_path):
    """An output written by `score --metric overlap-f1`; returns the score command's arguments without --metric."""
    out = tmp_path / "out.jsonl"
    argv = ["score", "--input", rows, "--output", out]
    assert faithkit(*argv, "--metric", "overlap-f1").code == 0
    return argv, out


def _refused(run, out: Path, before: str, *changes: str):
    assert run.code == 2 and len(run.error_lines) == 1 and "Traceback" not in run.err
    assert run.error_lines[0].startswith(f"error: {out} was written by a different job (")
    for change in changes:
        assert change in run.error_lines[0]
    assert run.error_lines[0].endswith(f"to continue it, rerun with its settings; otherwise {RESTART_HINT}")
    assert out.read_text() == before


def test_another_metric_is_refused_naming_it(faithkit, scored):
    argv, out = scored
    before = out.read_text()
    _refused(
        faithkit(*argv, "--metric", "document-bleu"), out, before, 'metric: "overlap-f1" then, "document-bleu" now'
    )


def test_another_model_or_model_setting_is_refused_naming_it(faithkit, model_folder, rows, tmp_path):
    out = tmp_path / "pmi.jsonl"
    argv = ["score", "--metric", "pmi-faith", "--input", rows, "--output", out]
    assert faithkit(*argv, "--model", model_folder).code == 0
    before = out.read_text()
    # refused before the other model would load: smollm2-135m is never read here
    _refused(
        faithkit(*argv, "--model", "smollm2-135m"),
        out,
        before,
        f'metric_options.model.name: "{Path(model_folder).resolve()}" then, "smollm2-135m" now',
    )
    _refused(
        faithkit(*argv, "--model", model_folder, "--normalize", "sum"),
        out,
        before,
        'metric_options.normalize: null then, "sum" now',
    )
    # where and how fast it runs changes no score: resumed
    run = faithkit(*argv, "--model", model_folder, "--batch-size", "2", "--device", "cpu", "--chunk-size", "3")
    assert run.code == 0 and "0 scored, 6 already done, 0 errors" in run.err


def test_another_decoding_setting_is_refused_naming_it(faithkit, model_folder, rows, tmp_path):
    out = tmp_path / "gen.jsonl"
    argv = ["generate", "--model", model_folder, "--input", rows, "--output", out, "--max-new-tokens", "2"]
    assert faithkit(*argv).code == 0
    before = out.read_text()
    _refused(faithkit(*argv, "--alpha", "0.5"), out, before, "decoding.alpha: 0.25 then, 0.5 now")
    assert faithkit(*argv, "--batch-size", "3").code == 0  # batching changes no response
    assert out.read_text() == before


def test_the_same_settings_resume_and_restart_starts_over(faithkit, scored):
    argv, out = scored
    before = out.read_text()
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 0 and "0 scored, 6 already done, 0 errors" in run.err
    assert out.read_text() == before
    run = faithkit(*argv, "--metric", "document-bleu", "--restart")
    assert run.code == 0 and "6 scored, 0 already done" in run.err
    assert all("document_bleu" in r and "overlap_f1" not in r for r in read_results(out))
    assert json.loads(Path(f"{out}.meta.json").read_text())["metric"] == "document-bleu"


def test_error_records_are_retried_on_rerun_and_kept_with_skip_errors(faithkit, tmp_path):
    broken = [dict(row) for row in ROWS]
    broken[2]["response"] = ""
    rows = write_jsonl(tmp_path / "rows.jsonl", broken)
    out = tmp_path / "out.jsonl"
    argv = ["score", "--metric", "overlap-f1", "--input", rows, "--output", out]
    assert "5 scored, 0 already done, 1 errors" in faithkit(*argv).err

    run = faithkit(*argv, "--skip-errors")
    assert run.code == 0 and "0 scored, 6 already done, 0 errors" in run.err
    assert read_results(out)[2]["error"] == "row r2: field 'response' (response) is empty"

    run = faithkit(*argv)
    assert run.code == 0 and "0 scored, 5 already done, 1 errors" in run.err  # retried: the same error

    write_jsonl(rows, ROWS)  # the user fixes the row: an edited row is computed again, even with --skip-errors
    run = faithkit(*argv, "--skip-errors")
    assert run.code == 0 and "1 scored, 5 already done, 0 errors" in run.err
    assert "1 rows changed since their records were written" in run.err
    records = read_results(out)
    assert [r["id"] for r in records] == [row["id"] for row in ROWS]  # the retried row back in its place
    assert records[2]["overlap_f1"] > 0 and "error" not in records[2]


def test_a_second_run_on_the_same_output_stops_at_once(faithkit, scored):
    argv, out = scored
    before = out.read_text()
    with FileLock(f"{out}.lock"):  # as a first run holds it while it writes
        run = faithkit(*argv, "--metric", "overlap-f1", "--restart")
    assert run.code == 2 and run.error_lines == [
        f"error: another run is writing {out} (it holds {out}.lock); wait for it to finish, or choose another --output"
    ]
    assert out.read_text() == before  # not even --restart touched it


def _damage(out: Path, number: int, line: str):
    lines = out.read_text().splitlines(keepends=True)
    lines[number - 1] = line
    out.write_text("".join(lines))
    return out.read_text()


@pytest.mark.parametrize(
    "line, problem",
    [
        ('{"id": "r1", "overlap_f1": 0.5\n', "line 2 is not JSON (Expecting ',' delimiter)"),
        ('{"overlap_f1": 0.5}\n', "line 2: id is missing (expected a row id (text or a whole number))"),
        ('{"id": [1], "overlap_f1": 0.5}\n', "line 2: id is [1] where a row id (text or a whole number) is expected"),
        ("[1, 2]\n", "line 2: the top level is [1, 2] where an object is expected"),
    ],
)
def test_a_damaged_middle_line_is_named(faithkit, scored, line, problem):
    argv, out = scored
    before = _damage(out, 2, line)
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 2 and run.error_lines == [
        f"error: {out}, {problem}; the file is damaged: delete that line to keep the other results, or {RESTART_HINT}"
    ]
    assert out.read_text() == before


def test_a_repeated_id_is_named_with_both_lines(faithkit, scored):
    argv, out = scored
    before = _damage(out, 5, out.read_text().splitlines(keepends=True)[1])
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 2 and run.error_lines == [
        f"error: {out}: id 'r1' appears on lines 2 and 5; delete one of them, or {RESTART_HINT}"
    ]
    assert out.read_text() == before


def test_results_without_their_job_record_are_not_trusted(faithkit, scored):
    argv, out = scored
    meta = Path(f"{out}.meta.json")
    for damaged, problem in (
        (
            "{not json",
            " is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        ),
        ('["a list"]', ': the top level is ["a list"] where an object is expected'),
    ):
        meta.write_text(damaged)
        run = faithkit(*argv, "--metric", "overlap-f1")
        assert run.code == 2 and run.error_lines == [f"error: {meta}{problem}; {RESTART_HINT}"]
    meta.unlink()
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 2 and run.error_lines == [
        f"error: {out} holds results but no record of the job that wrote them ({meta.name} is missing); {RESTART_HINT}"
    ]


def _leave_parts(out: Path, complete: list[dict], fingerprint: dict, layout: dict[str, list[int]]):
    """Files as a data-parallel run stopped mid-way leaves them: records in the output and in per-process parts."""
    for name, numbers in layout.items():
        with ResultWriter(out.with_name(out.name + name), resume=False, fingerprint=fingerprint) as writer:
            for number in numbers:
                writer.write(complete[number])
    with open(out.with_name(out.name + ".part0"), "a") as part:
        part.write(json.dumps(complete[5])[:15])  # killed while writing


def test_parts_left_by_a_parallel_run_are_folded_in(faithkit, scored):
    argv, out = scored
    complete, fingerprint = read_results(out), json.loads(Path(f"{out}.meta.json").read_text())
    _leave_parts(out, complete, fingerprint, {"": [0, 1], ".part0": [2, 4], ".part1": [3]})
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 0 and "1 scored, 5 already done, 0 errors" in run.err  # only r5 was computed again
    assert read_results(out) == complete
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(out.name)) == [
        "out.jsonl",
        "out.jsonl.meta.json",
        "out.jsonl.provenance.json",
    ]


def test_parts_of_another_job_are_refused_and_restart_discards_them(faithkit, scored):
    argv, out = scored
    complete, fingerprint = read_results(out), json.loads(Path(f"{out}.meta.json").read_text())
    _leave_parts(out, complete, {**fingerprint, "metric": "document-bleu"}, {"": [], ".part0": [2, 4]})
    part = out.with_name(out.name + ".part0")
    before = part.read_text()
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 2 and run.error_lines == [
        f'error: {part} was written by a different job (metric: "document-bleu" then, "overlap-f1" now); to continue it, '
        f"rerun with its settings; otherwise {RESTART_HINT}"
    ]
    assert part.read_text() == before
    run = faithkit(*argv, "--metric", "overlap-f1", "--restart")
    assert run.code == 0 and "6 scored, 0 already done" in run.err
    assert read_results(out) == complete and not part.exists()


def test_an_edited_row_is_computed_again_and_rows_gone_from_the_input_are_reported(faithkit, scored, rows):
    argv, out = scored
    edited = [dict(row) for row in ROWS[1:]]  # r0 is gone
    edited[1]["response"] = "bananas are yellow"  # r2 edited
    write_jsonl(rows, edited)
    run = faithkit(*argv, "--metric", "overlap-f1")
    assert run.code == 0 and "1 scored, 4 already done, 0 errors" in run.err
    assert f"{out}: 1 rows changed since their records were written; computing them again" in run.err
    assert f"{out}: 1 records have ids the input no longer has (r0); they stay, at the end of the file" in run.err
    records = read_results(out)
    assert [r["id"] for r in records] == ["r1", "r2", "r3", "r4", "r5", "r0"]  # one record per id
    assert records[1]["response"] == "bananas are yellow" and records[1]["overlap_f1"] == 0.0
    again = faithkit(*argv, "--metric", "overlap-f1")
    assert "0 scored, 5 already done, 0 errors" in again.err and "changed" not in again.err


def test_another_input_with_the_same_ids_is_computed_again(faithkit, scored, tmp_path):
    argv, out = scored
    other = write_jsonl(tmp_path / "other.jsonl", [{**row, "response": "pears"} for row in ROWS])
    run = faithkit("score", "--input", other, "--output", out, "--metric", "overlap-f1")
    assert run.code == 0 and "6 scored, 0 already done" in run.err
    assert all(r["response"] == "pears" and r["overlap_f1"] == 0.0 for r in read_results(out))


def test_the_old_bleu_name_is_refused_naming_the_metrics(faithkit, scored):
    argv, out = scored
    old = faithkit(*argv, "--metric", "bleu", "--restart")
    assert old.code == 2 and "argument --metric: must be one of " in old.err and "document-bleu" in old.err
    assert old.err.rstrip().endswith("got 'bleu'")
