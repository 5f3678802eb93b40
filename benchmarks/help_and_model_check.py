"""How long ``faithkit COMMAND --help`` and an unknown model name take, here and in another checkout, side by side.

Each is a fresh ``python -m faithkit …`` process; the figure is the best of ``--repeats`` runs of its wall time and
of its CPU time (user + system, which a busy machine inflates less); each unknown name runs once. The unknown name is ``nosuch/model`` with the
hub unreachable and ``HF_HUB_OFFLINE`` unset (one question to the hub, then the error; ``--offline`` sets it), each
command writing into a fresh folder that must stay empty. ``--before`` is another checkout (e.g. the main branch)
run the same way; the ratios are before / here. The last line printed is one JSON object.

    python benchmarks/help_and_model_check.py --before ../main
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELPS = [
    [],
    ["score"],
    ["generate"],
    ["rerank"],
    ["sweep"],
    ["meta-eval"],
    ["meta-eval", "labels"],
    ["meta-eval", "begin"],
    ["meta-eval", "q2-wow"],
    ["meta-eval", "system-level"],
    ["explain"],
    ["data", "export"],
    ["train"],
    ["annotate"],
]


def unknown_models(rows: Path, out: Path) -> dict[str, list[str]]:
    """Each command that loads a model, with the unknown name where a model goes."""
    return {
        "generate": ["generate", "--model", "nosuch/model", "--input", str(rows), "--output", str(out / "g.jsonl")],
        "sweep --generator": ["sweep", "--generator", "nosuch/model", "--scoring-model", "smollm2-135m"]
        + ["--input", str(rows), "--out", str(out)],
        "sweep --scoring-model": ["sweep", "--generator", "smollm2-135m", "--scoring-model", "nosuch/model"]
        + ["--input", str(rows), "--out", str(out)],
        "score": ["score", "--metric", "pmi-faith", "--model", "nosuch/model", "--input", str(rows)]
        + ["--output", str(out / "s.jsonl")],
        "rerank": ["rerank", "--model", "nosuch/model", "--input", str(rows), "--candidates"]
        + [str(ROOT / "examples" / "candidates.jsonl"), "--output", str(out / "r.jsonl")],
        "meta-eval labels": ["meta-eval", "labels", "--input", str(ROOT / "examples" / "demo.jsonl")]
        + ["--label-column", "id", "--positive", "x", "--metrics", "pmi-faith", "--model", "nosuch/model"]
        + ["--out", str(out)],
        "train": ["train", "--config", str(ROOT / "configs" / "train" / "smollm2-topicalchat.yaml")]
        + ["--model", "nosuch/model", "--output-dir", str(out)],
    }


def timed(checkout: Path, argv: list[str], environment: dict) -> tuple[float, float, int, str]:
    """Wall and CPU seconds of ``python -m faithkit ARGV`` from ``checkout``, its exit status and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "faithkit", *argv],
        env={**environment, "PYTHONPATH": str(checkout)},
        cwd=checkout,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, run.returncode, run.stderr


def measure(checkout: Path, repeats: int, offline: bool) -> dict:
    environment = {key: value for key, value in os.environ.items() if key != "HF_HUB_OFFLINE"}
    if offline:
        environment["HF_HUB_OFFLINE"] = "1"
    helps = {}
    for argv in HELPS:
        runs = [timed(checkout, [*argv, "--help"], environment) for _ in range(repeats)]
        assert all(code == 0 for _, _, code, _ in runs), (argv, runs[0][3][-300:])
        helps[" ".join(["faithkit", *argv])] = (min(r[0] for r in runs), min(r[1] for r in runs))
    failures = {}
    with tempfile.TemporaryDirectory() as scratch:
        rows = ROOT / "examples" / "rows.jsonl"
        for name in unknown_models(rows, Path(scratch) / "out"):  # once each: before, a run took minutes
            out = Path(scratch) / f"out-{name.replace(' ', '_')}"
            wall, cpu, code, err = timed(checkout, unknown_models(rows, out)[name], environment)
            left = sorted(p.name for p in out.rglob("*")) if out.exists() else []
            failures[name] = (wall, cpu, code, len(err.strip().splitlines()), left, err.strip().splitlines()[-1][:120])
    return {"help": helps, "unknown_model": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to measure the same way (e.g. ../main)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--offline", action="store_true", help="set HF_HUB_OFFLINE=1 (no question to the hub)")
    args = parser.parse_args()
    here = measure(ROOT, args.repeats, args.offline)
    before = measure(args.before.resolve(), args.repeats, args.offline) if args.before else None
    print(f"{'--help of':<32} {'wall s':>8} {'cpu s':>8}" + (f" {'before wall':>12} {'ratio':>7}" if before else ""))
    for name, (wall, cpu) in here["help"].items():
        line = f"{name:<32} {wall:8.2f} {cpu:8.2f}"
        if before:
            line += f" {before['help'][name][0]:12.2f} {before['help'][name][0] / wall:7.1f}"
        print(line)
    print(f"\n{'unknown model':<20} {'wall s':>7} {'cpu s':>6} {'rc':>3} {'lines':>5}  left in --out  last line")
    for name, (wall, cpu, code, lines, left, last) in here["unknown_model"].items():
        print(f"{name:<20} {wall:7.2f} {cpu:6.2f} {code:3d} {lines:5d}  {left or 'nothing'}  {last}")
        if before:
            b = before["unknown_model"][name]
            print(f"{'  before':<20} {b[0]:7.2f} {b[1]:6.2f} {b[2]:3d} {b[3]:5d}  {b[4] or 'nothing'}  {b[5]}")
    summary = {
        "help_wall_max": max(wall for wall, _ in here["help"].values()),
        "help_cpu_max": max(cpu for _, cpu in here["help"].values()),
        "unknown_model_wall_max": max(r[0] for r in here["unknown_model"].values()),
        "unknown_model_all_rc2_one_line_nothing_left": all(
            r[2] == 2 and r[3] == 1 and not r[4] for r in here["unknown_model"].values()
        ),
    }
    if before:
        summary["before_help_wall_max"] = max(wall for wall, _ in before["help"].values())
        summary["before_unknown_model_wall_max"] = max(r[0] for r in before["unknown_model"].values())
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
