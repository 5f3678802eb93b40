"""How much judging does a sweep save by running each scorer once over everything it scores?

Two savings of faithkit/sweep/judging.py, each measured against the same sweep without it, side by
side on the same decodes:

* **rerank candidates in the sweep's pass**: when a rerank cell's judge is the sweep's own scorer
  (the same metric, model and prompt layout), its candidates are scored in the pass that scores
  every other cell's response, each context's prefix once for the grid and the candidates.
  Without it (``rerank_apart``: the rerank judge's identity changed, nothing else) they get a
  pass of their own and every context runs through the judge twice.
* **PMI-FAITH read off faith-judge's rows**: faith-judge's rows carry PMI-FAITH's under the same
  judge LM, so a sweep measuring both runs the LM once. Without it (``lm_twice``) each runs its own.

The sweeps: SmolLM2-135M-Instruct in the plain prompt layout (``chat: false``) generating and judging
itself (the judge LM faith-judge's weights were fitted with) on the first ``--contexts`` rows of the
Q² WoW dodeca set; plain greedy, PMI-DECODE (0.25, 0.6) and rerank (n = 8 sampled candidates) with
PMI-FAITH and the lexical measures for the first comparison, the same without rerank and with
faith-judge added (the default metrics) for the second. Each grid is generated once; each sweep resumes a
copy of its folder without the score files, and only judging is timed. Each pair must choose the
same candidates and give the same measures within 1e-5. The last line printed is one JSON object.

    python benchmarks/sweep_judge_passes.py --contexts 16 --threads 2
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
    "scoring_model": "smollm2-135m",
    "chat": False,
    "input": str(DATA),
    "gold_column": "gold",
    "strategies": [{"name": "plain"}, {"name": "pmi", "alpha": [0.25], "top_p": [0.6]}, {"name": "rerank", "n": [8]}],
    "seed": 0,
    "max_new_tokens": 40,
    "batch_size": 8,
    "metrics": ["pmi-faith", "lexical"],
}
WITHOUT_RERANK = {
    "strategies": SETTINGS["strategies"][:2],
    "metrics": ["faith-judge", "pmi-faith", "lexical"],
    "seed": None,
}
SCORE_FILES = ("scores.jsonl*", "faith-judge.jsonl*", "candidates/pmi-faith.jsonl*")


def judged(folder: Path, contexts: int, calls: list, settings: dict = SETTINGS) -> dict:
    """Run (or resume) the sweep into ``folder``: its judging's wall and CPU seconds, LM calls and table."""
    config = load_config(None, {**settings, "limit": contexts, "out": str(folder)})
    seconds = [0.0, 0.0]
    real_judge, real_compute = sweep_run.judge, PMIFaith.compute_rows

    def timed(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return real_judge(*args, **kwargs)
        finally:
            seconds[0] += time.perf_counter() - wall
            seconds[1] += time.process_time() - cpu

    def counting(self, documents, histories, responses, *rest, **kwargs):
        calls.append(len(responses))
        return real_compute(self, documents, histories, responses, *rest, **kwargs)

    sweep_run.judge, PMIFaith.compute_rows = timed, counting
    try:
        result = run_sweep(config)
    finally:
        sweep_run.judge, PMIFaith.compute_rows = real_judge, real_compute
    reranked = [row["cell"] for row in result.table if row["cell"].startswith("rerank")]
    lines = (folder / "cells" / f"{reranked[0]}.jsonl").read_text().splitlines() if reranked else []
    return {
        "wall": seconds[0],
        "cpu": seconds[1],
        "calls": len(calls),
        "responses": sum(calls),
        "table": result.table,
        "chosen": [json.loads(line)["response"] for line in lines],
        "markdown": result.markdown,
    }


def copy_decodes(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    for pattern in SCORE_FILES:
        for path in target.glob(pattern):
            path.unlink()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=16, help="dev rows (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    root = Path(tempfile.mkdtemp(prefix="sweep_judge_passes_"))

    generation_calls: list = []
    judged(root / "decoded", args.contexts, generation_calls)  # decodes, then judges: the copies' starting point
    judged(root / "decoded_without_rerank", args.contexts, generation_calls, {**SETTINGS, **WITHOUT_RERANK})
    runs = {}
    real_options, real_read_from = judging._rerank_options, dict(judging.READ_FROM)
    for name in ("shared", "rerank_apart", "lm_once", "lm_twice"):
        lm = name in ("lm_once", "lm_twice")
        copy_decodes(root / ("decoded_without_rerank" if lm else "decoded"), root / name)
        if name == "rerank_apart":
            judging._rerank_options = lambda *a: {**real_options(*a), "benchmark": "apart"}  # another identity
        if name == "lm_twice":
            judging.READ_FROM.clear()
        try:
            settings = {**SETTINGS, **WITHOUT_RERANK} if lm else SETTINGS
            runs[name] = judged(root / name, args.contexts, [], settings)
        finally:
            judging._rerank_options = real_options
            judging.READ_FROM.update(real_read_from)
    assert not (root / "shared" / "candidates" / "pmi-faith.jsonl").exists()
    assert (root / "rerank_apart" / "candidates" / "pmi-faith.jsonl").exists()

    shared, once = runs["shared"], runs["lm_once"]
    assert runs["rerank_apart"]["chosen"] == shared["chosen"], "the rerank sweeps chose other candidates"
    largest = 0.0
    for first, second, measures in (
        (shared, runs["rerank_apart"], ("pmi_faith",)),
        (once, runs["lm_twice"], ("pmi_faith", "faith_judge")),
    ):
        for a, b in zip(first["table"], second["table"]):
            largest = max(largest, *(abs(a[m] - b[m]) for m in measures))
    assert largest <= 1e-5, f"the measures differ by {largest:.2e}"
    shutil.rmtree(root)
    print(shared["markdown"], once["markdown"], sep="\n")
    for name, run in runs.items():
        print(
            f"judging, {name}: {run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU, {run['calls']} LM scorer calls over "
            f"{run['responses']} responses"
        )
    figures = {
        "rerank_speedup": round(runs["rerank_apart"]["wall"] / shared["wall"], 3),
        "rerank_cpu_speedup": round(runs["rerank_apart"]["cpu"] / shared["cpu"], 3),
        "lm_once_speedup": round(runs["lm_twice"]["wall"] / once["wall"], 3),
        "lm_once_cpu_speedup": round(runs["lm_twice"]["cpu"] / once["cpu"], 3),
        "identical_choices": True,
        "max_measure_difference": largest,
        **{f"{name}_seconds": round(run["wall"], 1) for name, run in runs.items()},
        **{f"{name}_calls": run["calls"] for name, run in runs.items()},
        **{f"{name}_responses": run["responses"] for name, run in runs.items()},
        "contexts": args.contexts,
        "threads": args.threads,
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
