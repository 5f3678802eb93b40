"""How much does ``meta-eval labels --metrics faith-judge,pmi-faith`` save by running the judge LM once?

Both metrics under one judge LM (smollm2-135m) on the first ``--rows`` rows of BEGIN dev (WoW):

* one pass (now): faith-judge scores with PMI-FAITH's four views and pmi-faith's rows are read off its records;
* two passes (before): each metric runs the LM on its own (the sharing switched off).

Each side runs ``faithkit meta-eval labels`` in this process into a fresh folder, after one untimed load of the
model. Both must report the same AUROCs for faith_judge and uncond_pmi, and pmi within 1e-4 (two LM passes differ
by float noise). The one-pass side reports ``pmi`` once; the two-pass side twice (``faith-judge:pmi``,
``pmi-faith:pmi``). The last line printed is one JSON object.

    python benchmarks/meta_eval_one_pass.py --rows 120 --threads 2
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.serving import models
from faithkit.cli import main
from faithkit.data import data_root
from faithkit.metrics import faith_judge

JUDGE = "smollm2-135m"


def first_rows(path: Path, rows: int, folder: Path) -> Path:
    """The header and first ``rows`` rows of a BEGIN TSV, as a file of their own."""
    with open(path, newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        lines = [next(reader)] + [line for _, line in zip(range(rows), reader)]
    target = folder / "begin_rows.tsv"
    with open(target, "w", newline="") as handle:
        csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\").writerows(lines)
    return target


def run(rows: Path, out: Path) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one ``meta-eval labels`` run, and its AUROC per score."""
    wall, cpu = time.perf_counter(), time.process_time()
    code = main(
        [
            "meta-eval", "labels", "--input", str(rows), "--label-column", "begin_label",
            "--positive", "Fully attributable", "--metrics", "faith-judge,pmi-faith", "--model", JUDGE,
            "--resamples", "200", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0, code
    seconds = time.perf_counter() - wall, time.process_time() - cpu
    results = json.loads((out / "results.json").read_text())["results"]
    return *seconds, {r["score"]: r["auroc"] for r in results if r["group"] == "all"}


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=120)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    models.load(JUDGE)  # untimed: the process's first imports of the model code
    with tempfile.TemporaryDirectory() as folder:
        rows = first_rows(data_root() / "begin" / "begin_dev_wow.tsv", args.rows, Path(folder))
        one_wall, one_cpu, one = run(rows, Path(folder) / "one")
        sharing = faith_judge.shares_judge_lm  # what meta-eval labels asks, at each run
        faith_judge.shares_judge_lm = lambda *options: False  # before: each metric its own LM pass
        try:
            two_wall, two_cpu, two = run(rows, Path(folder) / "two")
        finally:
            faith_judge.shares_judge_lm = sharing
    assert list(one) == ["faith_judge", "pmi", "uncond_pmi"], list(one)
    assert list(two) == ["faith_judge", "faith-judge:pmi", "pmi-faith:pmi", "uncond_pmi"], list(two)
    assert one["faith_judge"] == two["faith_judge"] and one["uncond_pmi"] == two["uncond_pmi"]
    assert abs(one["pmi"] - two["pmi-faith:pmi"]) < 1e-4
    print(f"{'':>12} {'one pass':>10} {'two passes':>11} {'ratio':>7}")
    print(f"{'wall s':>12} {one_wall:>10.1f} {two_wall:>11.1f} {two_wall / one_wall:>6.2f}x")
    print(f"{'CPU s':>12} {one_cpu:>10.1f} {two_cpu:>11.1f} {two_cpu / one_cpu:>6.2f}x")
    print(
        json.dumps(
            {
                "rows": args.rows,
                "judge": JUDGE,
                "one_pass_wall_s": round(one_wall, 1),
                "two_passes_wall_s": round(two_wall, 1),
                "one_pass_cpu_s": round(one_cpu, 1),
                "two_passes_cpu_s": round(two_cpu, 1),
                "wall_ratio": round(two_wall / one_wall, 2),
                "aurocs": {key: round(value, 4) for key, value in one.items()},
            }
        )
    )


if __name__ == "__main__":
    main_()
