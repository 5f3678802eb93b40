"""Data-parallel jobs: two processes under `accelerate launch` write the output one process writes.

accelerate's ``--cpu`` starts a single process (several need MPI), so the processes are
started with ``--multi_gpu``, torchrun's way, which on a machine without a GPU faithkit
joins over gloo. Each process takes every second remaining row: the main process's
progress line shows its half. The two launches run at the same time, to share their
start-up time.
"""

import socket
import subprocess
import sys

import pytest

from faithkit.data import read_results
from faithkit.metrics.pmi_faith import PMIFaith

from .helpers import ROOT, crash_after, run_main, subprocess_env, write_jsonl

ROWS = [{"id": f"p{i}", "document": f"Note {i % 4}: pears number {i} ripen in autumn.", "history": ["And pears?"],
         "response": f"Pears {i} ripen in autumn{'!' * (i % 3)}", "gold": f"gold {i}"} for i in range(12)]
DONE_BEFORE = 5  # rows a single process scored before it was stopped; the two processes finish the rest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch(*argv) -> subprocess.Popen:
    command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
               "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
               "--main_process_port", str(_free_port()), "-m", "faithkit", *[str(a) for a in argv]]
    return subprocess.Popen(command, env=subprocess_env(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def runs(model_folder, tmp_path_factory):
    """Both launches' (status, stdout, stderr) by command, and their folder; the one-process outputs to compare
    with are made while they run."""
    folder = tmp_path_factory.mktemp("parallel")
    rows = write_jsonl(folder / "rows.jsonl", ROWS)
    score = ["score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows]
    generate = ["generate", "--model", model_folder, "--input", rows, "--max-new-tokens", "3"]

    processes = {"generate": _launch(*generate, "--output", folder / "responses-2.jsonl")}
    try:
        # a single process stopped after DONE_BEFORE rows: the two processes resume its output
        with pytest.MonkeyPatch.context() as patch:
            crash_after(patch, PMIFaith, "compute_rows", 1, DONE_BEFORE, KeyboardInterrupt())
            assert run_main(*score, "--output", folder / "scores-2.jsonl", "--chunk-size", 1) == 130
        assert len(read_results(folder / "scores-2.jsonl")) == DONE_BEFORE
        processes["score"] = _launch(*score, "--output", folder / "scores-2.jsonl")
        for name, argv in (("score", score), ("generate", generate)):
            assert run_main("-q", *argv, "--output", folder / f"{name}-1.jsonl") == 0
        finished = {name: process.communicate(timeout=300) for name, process in processes.items()}
    finally:
        for process in processes.values():
            process.kill()
    return {name: (processes[name].returncode, *finished[name]) for name in processes}, folder


def test_score_resumed_by_two_processes_equals_one_process(runs):
    (code, out, err), folder = runs[0]["score"], runs[1]
    assert code == 0, err
    assert "pmi-faith: 4/4 rows" in err  # the main process's share of the 7 rows left: every second one
    assert f"7 scored, {DONE_BEFORE} already done, 0 errors" in err
    assert out.count("| id | pmi |") == 1  # the table once, from the main process
    parallel, single = read_results(folder / "scores-2.jsonl"), read_results(folder / "score-1.jsonl")
    assert [r["id"] for r in parallel] == [r["id"] for r in single] == [row["id"] for row in ROWS]
    for got, want in zip(parallel, single):
        assert got.keys() == want.keys()
        assert got["pmi"] == pytest.approx(want["pmi"], abs=1e-5)
        assert got["uncond_pmi"] == pytest.approx(want["uncond_pmi"], abs=1e-5)
        assert got["tokens"] == want["tokens"] and got["document"] == want["document"]
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("scores-2")) == [
        "scores-2.jsonl", "scores-2.jsonl.lock", "scores-2.jsonl.meta.json"]  # the part files are merged away


def test_greedy_generate_by_two_processes_equals_one_process(runs):
    (code, out, err), folder = runs[0]["generate"], runs[1]
    assert code == 0, err
    assert "generate: 6/6 rows" in err and "12 generated, 0 already done, 0 errors" in err
    assert read_results(folder / "responses-2.jsonl") == read_results(folder / "generate-1.jsonl")
