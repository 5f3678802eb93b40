"""Data-parallel jobs: two processes under `accelerate launch` write the output one process writes, and train to
the loss curve of one process with the same global batch.

Score and sweep resume a single process's interrupted output, so the merge of leftovers is
tested too.

accelerate's ``--cpu`` starts a single process (several need MPI), so the processes are
started with ``--multi_gpu``, torchrun's way, which on a machine without a GPU faithkit
joins over gloo. Each process takes every second remaining row: the main process's
progress line shows its half. The four commands run in turn in one launch
(commands_in_turn.py), which the one-process runs to compare with share the cores with.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from faithkit.data import read_results
from faithkit.metrics.pmi_faith import PMIFaith
from faithkit.train import load_config, train
from faithkit.train.config import overrides_from_args
from tests.test_train import metrics_csv, parse, training_in_this_process

from .helpers import ROOT, crash_after, free_port, run_main, subprocess_env, write_jsonl, write_wow_csv

ROWS = [
    {
        "id": f"p{i}",
        "document": f"Note {i % 4}: pears number {i} ripen in autumn.",
        "history": ["And pears?"],
        "response": f"Pears {i} ripen in autumn{'!' * (i % 3)}",
        "gold": f"gold {i}",
    }
    for i in range(12)
]
DONE_BEFORE = 5  # rows a single process scored before it was stopped; the two processes finish the rest
SWEEP_ROWS = [
    {**row, "id": f"{row['id']}-{copy}", "document": f"{row['document']} Copy {copy}."}
    for copy in range(3)
    for row in ROWS
]  # 36 contexts: 9 batches of 4, three scoring groups
CELLS_BEFORE = 5  # cell batches a single process generated before it was stopped: batch 1 whole, 2 cells of batch 2

TRAINING = [
    "--config",
    ROOT / "configs" / "train" / "tiny-gpt2.yaml",
    "--max-steps",
    "6",
    "--eval-steps",
    "3",
    "--generate-rows",
    "2",
]

pytestmark = pytest.mark.slow  # accelerate launch subprocesses


def _launch_in_turn(folder, commands: dict[str, list]) -> subprocess.Popen:
    """One launch of two processes running ``commands`` in turn (see commands_in_turn.py: they share its start-up)."""
    spec = folder / "commands.json"
    spec.write_text(json.dumps({name: [str(a) for a in argv] for name, argv in commands.items()}))
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
        Path(__file__).with_name("commands_in_turn.py"),
        folder,
        spec,
    ]
    return subprocess.Popen(
        [str(a) for a in command],
        env=subprocess_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _launched(folder, name: str, launch: tuple[int, str, str]) -> tuple[int | None, str, str]:
    """A command's (status, stdout, stderr) in the launch, both processes' output together; the launch's own status
    and stderr when a process did not finish it."""
    parts = [folder / f"{name}.{rank}" for rank in (0, 1)]
    if not all(Path(f"{part}.status").exists() for part in parts):
        return launch[0] or None, launch[1], launch[2]
    codes = [int(Path(f"{part}.status").read_text()) for part in parts]
    out, err = ("".join(Path(f"{part}.{kind}").read_text() for part in parts) for kind in ("out", "err"))
    return next((code for code in codes if code), 0), out, err


WOW_SETS = {
    "consistent": [f"red apples grow on tree {i}" for i in range(5)],
    "inconsistent": [f"green pears fly {i}" for i in range(5)],
}


def _stop_grid_after(monkeypatch, cells: int) -> None:
    """Ctrl-C in the sweep's generation once ``cells`` cell batches have been written."""
    import faithkit.decoding

    original = faithkit.decoding.iter_grid

    def stopping(*args, **kwargs):
        nonlocal cells
        for item in original(*args, **kwargs):
            if cells == 0:
                raise KeyboardInterrupt
            cells -= 1
            yield item

    monkeypatch.setattr(faithkit.decoding, "iter_grid", stopping)


@pytest.fixture(scope="module")
def runs(model_folder, tmp_path_factory):
    """Each command's (status, stdout, stderr) under the launch, and their folder; the one-process outputs to
    compare with are made while it runs."""
    folder = tmp_path_factory.mktemp("parallel")
    rows = write_jsonl(folder / "rows.jsonl", ROWS)
    score = ["score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows]
    generate = ["generate", "--model", model_folder, "--input", rows, "--max-new-tokens", "3"]

    sweep_rows = write_jsonl(folder / "sweep-rows.jsonl", SWEEP_ROWS)
    sweep = [
        "sweep",
        "--generator",
        model_folder,
        "--scoring-model",
        model_folder,
        "--input",
        sweep_rows,
        "--alpha",
        "0.5",
        "--top-p",
        "0.6,1",
        "--max-new-tokens",
        "3",
        "--batch-size",
        "4",
        "--metrics",
        "pmi-faith,lexical",
    ]

    wow = [
        write_wow_csv(folder / f"{name}.csv", responses, "Red apples grow on trees.")
        for name, responses in WOW_SETS.items()
    ]
    meta_eval = ["meta-eval", "q2-wow", "--metric", "overlap-f1", "--consistent", wow[0], "--inconsistent", wow[1]]

    # single processes stopped part-way: the two processes resume their outputs
    with pytest.MonkeyPatch.context() as patch:
        _stop_grid_after(patch, CELLS_BEFORE)
        assert run_main("-q", *sweep, "--out", folder / "sweep-2") == 130
    with pytest.MonkeyPatch.context() as patch:
        crash_after(patch, PMIFaith, "compute_rows", 1, DONE_BEFORE, KeyboardInterrupt())
        assert run_main(*score, "--output", folder / "scores-2.jsonl", "--chunk-size", 1) == 130
    assert len(read_results(folder / "scores-2.jsonl")) == DONE_BEFORE
    commands = {
        "generate": [*generate, "--output", folder / "responses-2.jsonl"],
        "meta-eval": [*meta_eval, "--out", folder / "meta-eval-2"],
        "sweep": [*sweep, "--out", folder / "sweep-2"],
        "score": [*score, "--output", folder / "scores-2.jsonl"],
        "train": ["train", *TRAINING, "--output-dir", folder / "train-2"],
    }  # last: it ends the process group
    launch = _launch_in_turn(folder, commands)
    try:
        for name, argv in (("score", score), ("generate", generate)):
            assert run_main("-q", *argv, "--output", folder / f"{name}-1.jsonl") == 0
        assert run_main("-q", *sweep, "--out", folder / "sweep-1") == 0
        assert run_main("-q", *meta_eval, "--out", folder / "meta-eval-1") == 0
        (folder / "train-1.json").write_text(json.dumps(_train_one_process(folder / "train-1")))
        out, err = launch.communicate(timeout=300)
    finally:
        launch.kill()
    return {name: _launched(folder, name, (launch.returncode, out, err)) for name in commands}, folder


def _train_one_process(output_dir):
    """The training run in this process, as train.py runs it."""
    with training_in_this_process():
        args = parse([str(arg) for arg in TRAINING])
        return train(load_config(args.config, overrides_from_args(args)), output_dir)


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
        "scores-2.jsonl",
        "scores-2.jsonl.meta.json",
        "scores-2.jsonl.provenance.json",  # written once, by the main process
    ]  # the part files are merged away, the lock file deleted


def test_greedy_generate_by_two_processes_equals_one_process(runs):
    (code, _, err), folder = runs[0]["generate"], runs[1]
    assert code == 0, err
    assert "generate: 6/6 rows" in err and "12 generated, 0 already done, 0 errors" in err
    assert "Loading weights" not in err  # no process draws transformers' load bar (faithkit/serving/third_party.py)
    assert read_results(folder / "responses-2.jsonl") == read_results(folder / "generate-1.jsonl")


def test_sweep_resumed_by_two_processes_equals_one_process(runs):
    (code, out, err), folder = runs[0]["sweep"], runs[1]
    assert code == 0, err
    assert out.count("best: ") == 1  # the table once, from the main process
    # the main process's share: 4 of the 8 unfinished batches, scoring groups 1 and 3 (16 and 4 contexts x 3 cells)
    assert "generate: batch 4/4 (4 contexts x" in err and "generate: batch 5/" not in err
    assert "pmi-faith: 48 responses" in err and "pmi-faith: 12 responses" in err
    parallel, single = folder / "sweep-2", folder / "sweep-1"
    for cell in ("plain", "pmi_a0.5_p0.6", "pmi_a0.5_p1"):
        assert read_results(parallel / "cells" / f"{cell}.jsonl") == read_results(single / "cells" / f"{cell}.jsonl")
    got, want = read_results(parallel / "scores.jsonl"), read_results(single / "scores.jsonl")
    assert [r["id"] for r in got] == [r["id"] for r in want] and len(got) == 3 * len(SWEEP_ROWS)
    for mine, theirs in zip(got, want):
        assert mine["response"] == theirs["response"] and mine["tokens"] == theirs["tokens"]
        assert mine["pmi"] == pytest.approx(theirs["pmi"], abs=1e-5)
    parallel_table = (parallel / "sweep.csv").read_text().splitlines()
    single_table = (single / "sweep.csv").read_text().splitlines()
    assert parallel_table[0] == single_table[0] and len(parallel_table) == 4
    for mine, theirs in zip(parallel_table[1:], single_table[1:]):  # cell, strategy, decoding, then numbers
        assert mine.split(",")[:3] == theirs.split(",")[:3]
        assert [float(v or "nan") for v in mine.split(",")[3:]] == pytest.approx(
            [float(v or "nan") for v in theirs.split(",")[3:]], abs=1e-5, nan_ok=True
        )
    assert not list(parallel.rglob("*.part*"))  # every part was merged away


def test_meta_eval_by_two_processes_equals_one_process(runs):
    (code, out, err), folder = runs[0]["meta-eval"], runs[1]
    assert code == 0, err
    assert out.count("| overlap_f1 |") == 1  # the table once, from the main process
    parallel, single = folder / "meta-eval-2", folder / "meta-eval-1"
    assert read_results(parallel / "scores.jsonl") == read_results(single / "scores.jsonl")
    assert json.loads((parallel / "summary.json").read_text()) == json.loads((single / "summary.json").read_text())


def test_two_processes_give_the_loss_curve_of_one_with_the_same_global_batch(runs):
    # on a machine without a GPU, --multi_gpu starts torchrun's processes and accelerate joins them over gloo
    (code, out, err), folder = runs[0]["train"], runs[1]
    assert code == 0, err[-3000:]
    summaries = {1: json.loads((folder / "train-1.json").read_text()), 2: json.loads(out.strip().splitlines()[-1])}
    assert "on 2 process(es)" in err
    assert summaries[1]["steps"] == summaries[2]["steps"] == 6
    one, two = metrics_csv(folder / "train-1"), metrics_csv(folder / "train-2")
    assert sorted(one["train_loss"]) == list(range(1, 7))
    assert two["train_loss"] == pytest.approx(one["train_loss"], rel=1e-5)
    assert two["dev_loss"] == pytest.approx(one["dev_loss"], rel=1e-5)
    assert summaries[2]["train_loss_last"] < summaries[2]["train_loss_first"]
    for count in (1, 2):  # the checkpoint folders are complete on either
        assert (folder / f"train-{count}" / "best" / "model.safetensors").exists()
        assert (folder / f"train-{count}" / "last" / "tokenizer.json").exists()
