"""How much judging does a sweep save by scoring rerank candidates in its own judge pass?

When a rerank cell's judge is the sweep's judge (the same metric, model and prompt layout), the
sweep scores the candidates in the pass that scores every other cell's response: one scorer
call per group of contexts, each context's prefix computed once for the grid's responses and
the candidates (faithkit/sweep/judging.py). Otherwise the candidates get a pass of their own,
and every context runs through the judge twice. This script runs the same sweep both ways, side
by side: SmolLM2-135M-Instruct in the plain prompt layout (``chat: false``) generating and
judging itself, plain greedy, PMI-DECODE (0.25, 0.6) and rerank (n = 8 sampled candidates) on
the first ``--contexts`` rows of the Q² WoW dodeca set.

* shared: the sweep as it runs;
* apart: the same sweep with the rerank judge's identity changed (the only difference), so the
  candidates are judged in a pass of their own under the generator.

Generation runs once (the apart sweep resumes a copy of the shared one's folder without its scores),
and the timed part is judging alone. Both must choose the same candidates and give the same PMI-FAITH
within 1e-5. The last line printed is one JSON object.

    python benchmarks/rerank_judge_pass.py --contexts 16 --threads 2
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.metrics.pmi_faith import PMIFaith
from faithkit.sweep import judging, load_config, run_sweep
from faithkit.sweep import run as sweep_run

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "q2_wow" / "dodeca_consistent.csv"
SETTINGS = {
    "generator": "smollm2-135m",
    "judge": "smollm2-135m",
    "chat": False,
    "input": str(DATA),
    "gold_column": "gold",
    "strategies": [{"name": "plain"}, {"name": "pmi", "alpha": [0.25], "top_p": [0.6]}, {"name": "rerank", "n": [8]}],
    "seed": 0,
    "max_new_tokens": 40,
    "batch_size": 8,
    "metrics": ["pmi-faith", "lexical"],
    "faithfulness": "pmi_faith",
}


def judged(folder: Path, contexts: int) -> tuple[float, float, object]:
    """Run (or resume) the sweep into ``folder``; return the wall and CPU seconds of its judging, and its result."""
    config = load_config(None, {**SETTINGS, "limit": contexts, "out": str(folder)})
    seconds = [0.0, 0.0]
    real = sweep_run.judge

    def timed(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            seconds[0] += time.perf_counter() - wall
            seconds[1] += time.process_time() - cpu

    sweep_run.judge = timed
    try:
        result = run_sweep(config)
    finally:
        sweep_run.judge = real
    return seconds[0], seconds[1], result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=16, help="dev rows (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    root = Path(tempfile.mkdtemp(prefix="rerank_judge_pass_"))

    calls: dict[str, list] = {"shared": [], "apart": []}
    real_compute, real_options = PMIFaith.compute_rows, judging._rerank_options
    run = ["shared"]

    def counting(self, documents, histories, responses, *rest, **kwargs):
        calls[run[0]].append(len(responses))
        return real_compute(self, documents, histories, responses, *rest, **kwargs)

    PMIFaith.compute_rows = counting
    try:
        shared_wall, shared_cpu, shared = judged(root / "shared", args.contexts)  # generates, then judges
        shutil.copytree(root / "shared", root / "apart")
        for scores in (root / "apart").glob("scores.jsonl*"):
            scores.unlink()  # the apart sweep keeps the decodes and judges them again
        run[0] = "apart"
        judging._rerank_options = lambda *a: {**real_options(*a), "benchmark": "apart"}  # another scorer identity
        apart_wall, apart_cpu, apart = judged(root / "apart", args.contexts)
    finally:
        PMIFaith.compute_rows, judging._rerank_options = real_compute, real_options
    assert not (root / "shared" / "candidates" / "pmi-faith.jsonl").exists()
    assert (root / "apart" / "candidates" / "pmi-faith.jsonl").exists()

    rerank = next(row["cell"] for row in shared.table if row["cell"].startswith("rerank"))
    chosen = [
        [json.loads(line)["response"] for line in (root / name / "cells" / f"{rerank}.jsonl").read_text().splitlines()]
        for name in ("shared", "apart")
    ]
    identical = chosen[0] == chosen[1]
    assert identical, "the two sweeps chose different candidates"
    largest = max(abs(a["pmi_faith"] - b["pmi_faith"]) for a, b in zip(shared.table, apart.table))
    assert largest <= 1e-5, f"PMI-FAITH differs by {largest:.2e}"
    shutil.rmtree(root)
    print(shared.markdown)
    print(
        f"judging: shared {shared_wall:.1f} s ({len(calls['shared'])} scorer calls, {sum(calls['shared'])} responses); "
        f"apart {apart_wall:.1f} s ({len(calls['apart'])} calls, {sum(calls['apart'])} responses); "
        f"CPU {shared_cpu:.1f} s against {apart_cpu:.1f} s"
    )
    print(
        json.dumps(
            {
                "speedup": round(apart_wall / shared_wall, 3),
                "cpu_speedup": round(apart_cpu / shared_cpu, 3),
                "identical_choices": identical,
                "max_pmi_faith_difference": largest,
                "shared_seconds": round(shared_wall, 1),
                "apart_seconds": round(apart_wall, 1),
                "shared_calls": len(calls["shared"]),
                "apart_calls": len(calls["apart"]),
                "shared_responses": sum(calls["shared"]),
                "apart_responses": sum(calls["apart"]),
                "contexts": args.contexts,
                "threads": args.threads,
                "load_average": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
