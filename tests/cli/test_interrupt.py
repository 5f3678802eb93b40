"""Stopping a job anywhere loses nothing: Ctrl-C, kill -9 and crashes at random rows, then a rerun.

The property: whatever row a run dies at, rerunning the same command leaves every input id
exactly once, in input order, with the values of a run that was never stopped. Crashes are
injected in-process (the computation raises after k rows, as Ctrl-C, a SystemExit or a
bug would) at seeded random rows, and once for real: a subprocess killed with SIGKILL.
"""

import importlib
import os
import random
import shlex
import signal
import time

import pytest

from faithkit.data import read_results
from faithkit.metrics.lexical import TextOverlap

from .helpers import crash_after, run_main, start_faithkit, write_jsonl

ROWS = [
    {
        "id": f"r{i}",
        "document": f"Document {i % 5} says apples number {i} grow on tall trees.",
        "history": ["Tell me about apples."],
        "response": f"Apples {i} grow on trees, {'they say ' * (i % 3)}.",
    }
    for i in range(40)
]
IDS = [row["id"] for row in ROWS]
# three crashes in a row, each after this many rows of its run: a Ctrl-C, a SystemExit, a bug (the traceback is its
# report); the file must stay sound through all of them
CRASHES = list(
    zip(
        random.Random(20240611).sample(range(4, 13), 3),
        [KeyboardInterrupt(), SystemExit(137), RuntimeError("out of memory")],
    )
)
# the processes that get a real Ctrl-C or kill -9 write their first rows slowly (0.2 s each) and, after the eighth,
# wait for their signal: neither a start-up delay nor a loaded machine lets one finish before it
SLOW_PMI_FAITH = """
import time
from faithkit.metrics.pmi_faith import PMIFaith
compute_rows, rows_begun = PMIFaith.compute_rows, 0
def slow_compute_rows(self, documents, *rest):
    global rows_begun
    rows_begun += len(documents)
    time.sleep(0.2 * len(documents) if rows_begun <= 8 else 3600)
    return compute_rows(self, documents, *rest)
PMIFaith.compute_rows = slow_compute_rows
"""


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("rows") / "rows.jsonl", ROWS)


def _pmi_faith(model_folder, rows, output, *extra):
    return ["score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows, "--output", output, *extra]


def _overlap_f1(_, rows, output, *extra):
    return ["score", "--metric", "overlap-f1", "--input", rows, "--output", output, *extra]


def _generate(model_folder, rows, output, *extra):
    return ["generate", "--model", model_folder, "--input", rows, "--output", output, "--max-new-tokens", "3", *extra]


@pytest.fixture(scope="module")
def never_stopped(rows, model_folder, tmp_path_factory):
    """Outputs of uninterrupted runs, by command."""
    folder = tmp_path_factory.mktemp("complete")
    commands = {"pmi-faith": _pmi_faith, "generate": _generate, "overlap-f1": _overlap_f1}
    outputs = {}
    for name, command in commands.items():
        assert run_main("-q", *command(model_folder, rows, folder / f"{name}.jsonl")) == 0
        outputs[name] = read_results(folder / f"{name}.jsonl")
    return outputs


def _assert_same_as_never_stopped(output, expected: list[dict]):
    records = read_results(output)
    assert [r["id"] for r in records] == IDS  # every id once, in input order
    for got, want in zip(records, expected):
        assert got.keys() == want.keys()
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, abs=1e-5), (got["id"], key)
            elif key != "token_pmi":
                assert got[key] == value, (got["id"], key)
        if "token_pmi" in want:
            assert got["token_pmi"] == pytest.approx(want["token_pmi"], abs=1e-5)


def _crash_and_resume(faithkit, monkeypatch, argv, output, owner, name, documents_at, done_word):
    """Crash at each of CRASHES in turn, each time resuming the same output; then finish it."""
    done = 0
    for rows, error in CRASHES:
        crash_after(monkeypatch, owner, name, documents_at, rows, error)
        if isinstance(error, RuntimeError):
            with pytest.raises(RuntimeError):
                faithkit(*argv)
        else:
            run = faithkit(*argv)
            assert run.code == (130 if isinstance(error, KeyboardInterrupt) else 137)
        monkeypatch.undo()
        before, done = done, len(read_results(output))
        assert before < done < len(ROWS)  # each run got further before it died
        if isinstance(error, KeyboardInterrupt):
            assert run.err.splitlines()[-1] == (
                f"interrupted: {done} rows are in {output}; rerun the same command to continue: "
                f"faithkit {shlex.join(map(str, argv))}"
            )
    run = faithkit(*argv)
    assert run.code == 0 and f"{len(ROWS) - done} {done_word}, {done} already done, 0 errors" in run.err


@pytest.mark.slow  # one job crashed at random rows until it ends: 3 s of CPU
def test_score_survives_crashes_at_random_rows(faithkit, monkeypatch, rows, never_stopped, tmp_path):
    output = tmp_path / "scores.jsonl"
    argv = _overlap_f1(None, rows, output, "--chunk-size", "3")
    _crash_and_resume(faithkit, monkeypatch, argv, output, TextOverlap, "compute_rows", 1, "scored")
    _assert_same_as_never_stopped(output, never_stopped["overlap-f1"])


@pytest.mark.slow  # one job crashed at random rows until it ends: 2.3 s of CPU
def test_generate_survives_crashes_at_random_rows(faithkit, monkeypatch, model_folder, rows, never_stopped, tmp_path):
    output = tmp_path / "responses.jsonl"
    argv = _generate(model_folder, rows, output, "--chunk-size", "4")
    generate_module = importlib.import_module("faithkit.decoding.grid")
    _crash_and_resume(faithkit, monkeypatch, argv, output, generate_module, "generate", 2, "generated")
    _assert_same_as_never_stopped(output, never_stopped["generate"])


def _wait_for_records(process, output, count: int, timeout: float = 120.0):
    """Block until ``output`` holds ``count`` complete lines; fail with the process's stderr if it ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if output.exists() and output.read_text().count("\n") >= count:
            return
        if process.poll() is not None:
            pytest.fail(
                f"faithkit ended (status {process.returncode}) before writing {count} records:\n{process.stderr.read()}"
            )
        time.sleep(0.02)
    process.kill()
    pytest.fail(f"no {count} records in {output} after {timeout} s")


@pytest.mark.slow  # faithkit subprocesses
def test_ctrl_c_or_kill_9_loses_nothing_and_the_rerun_completes(faithkit, model_folder, rows, never_stopped, tmp_path):
    # two real processes, started together to share their start-up time: one gets Ctrl-C, the other kill -9
    stopped, killed = tmp_path / "ctrl-c.jsonl", tmp_path / "kill-9.jsonl"
    kill_at = random.Random(CRASHES[0][0]).randint(2, 8)
    processes = [
        start_faithkit(*_pmi_faith(model_folder, rows, output, "--chunk-size", "1"), prelude=SLOW_PMI_FAITH)
        for output in (stopped, killed)
    ]
    try:
        _wait_for_records(processes[0], stopped, 1)
        # a second run on an output while the first writes it: stopped at once, nothing touched
        second = faithkit(*_pmi_faith(model_folder, rows, stopped))
        assert second.code == 2 and second.error_lines == [
            f"error: another run is writing {stopped} (it holds {stopped}.lock); wait for it to finish, or choose "
            f"another --output"
        ]
        processes[0].send_signal(signal.SIGINT)
        _wait_for_records(processes[1], killed, kill_at)
        processes[1].send_signal(signal.SIGKILL)
        _, err = processes[0].communicate(timeout=60)
        processes[1].communicate(timeout=60)
    finally:
        for process in processes:
            process.kill()

    assert processes[0].returncode == 130 and "Traceback" not in err
    done = {
        stopped: len(read_results(stopped)),  # every line whole
        killed: killed.read_text().count("\n"),
    }  # complete lines; a half-written last one is dropped on rerun
    assert err.splitlines()[-1].startswith(
        f"interrupted: {done[stopped]} rows are in {stopped}; rerun the same command to continue: faithkit "
    )
    assert processes[1].returncode == -signal.SIGKILL
    assert 1 <= done[stopped] < len(ROWS) and kill_at <= done[killed] < len(ROWS)
    for output, rows_done in done.items():
        run = faithkit(*_pmi_faith(model_folder, rows, output))  # the same command (chunk size is no setting)
        assert run.code == 0 and f"{len(ROWS) - rows_done} scored, {rows_done} already done, 0 errors" in run.err
        _assert_same_as_never_stopped(output, never_stopped["pmi-faith"])


def test_ctrl_c_while_a_chunk_is_made_durable_counts_it(faithkit, monkeypatch, rows, tmp_path):
    # the chunk's lines are in the file, synced once for the chunk, when Ctrl-C arrives (during that fsync)
    from faithkit.data.jobs import FIRST_CHUNK

    output = tmp_path / "scores.jsonl"
    fsync, calls = os.fsync, 0

    def interrupted_fsync(descriptor):
        nonlocal calls
        calls += 1
        fsync(descriptor)
        if calls == 2:  # call 1 makes the .meta.json durable, call 2 the first chunk
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    run = faithkit(*_overlap_f1(None, rows, output))
    monkeypatch.undo()
    assert run.code == 130 and len(read_results(output)) == FIRST_CHUNK
    assert run.err.splitlines()[-1] == (
        f"interrupted: {FIRST_CHUNK} rows are in {output}; rerun the same command to continue: "
        f"faithkit {shlex.join(map(str, _overlap_f1(None, rows, output)))}"
    )


SLOW_OVERLAP = SLOW_PMI_FAITH.replace(
    "faithkit.metrics.pmi_faith import PMIFaith", "faithkit.metrics.lexical import TextOverlap as PMIFaith"
)


@pytest.mark.slow  # a faithkit subprocess
def test_sigterm_stops_a_job_as_ctrl_c_does_with_status_143(faithkit, rows, never_stopped, tmp_path):
    output = tmp_path / "terminated.jsonl"
    process = start_faithkit(*_overlap_f1(None, rows, output, "--chunk-size", "1"), prelude=SLOW_OVERLAP)
    try:
        _wait_for_records(process, output, 2)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    done = len(read_results(output))
    assert process.returncode == 143 and err.splitlines() == [
        f"interrupted: {done} rows are in {output}; rerun the same command to continue: "
        f"faithkit {shlex.join(map(str, _overlap_f1(None, rows, output, '--chunk-size', '1')))}"
    ]
    run = faithkit(*_overlap_f1(None, rows, output))
    assert run.code == 0 and f"{len(ROWS) - done} scored, {done} already done, 0 errors" in run.err
    _assert_same_as_never_stopped(output, never_stopped["overlap-f1"])
