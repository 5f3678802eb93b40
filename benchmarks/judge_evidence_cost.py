"""Cost of the token-level evidence (and of the whole judge) against plain PMI-FAITH, side by side on BEGIN CMU-DoG dev.

The rows go in chunks; each chunk is scored by every side in turn (order rotating per chunk), so
a change in the machine's load falls on all sides alike. Both wall time and this process's CPU
time are reported (on a shared machine CPU time is the steadier figure). Same judge LM, same
batch size, one thread. The last line is one JSON object with the figures.

    nice -n 5 python benchmarks/judge_evidence_cost.py [--rows 48] [--chunk 8] [--model smollm2-135m]
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from faithkit.data import data_root
from faithkit.data.corpora.begin import load_begin
from faithkit.metrics.faith_judge import FaithJudge
from faithkit.metrics.pmi_faith import PMIFaith


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=48, help="first N rows of begin_dev_cmu.tsv")
    parser.add_argument("--chunk", type=int, default=8)
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [row for row in load_begin([data_root() / "begin" / "begin_dev_cmu.tsv"]) if not row.error][: args.rows]
    plain = PMIFaith(model=args.model)
    sides = {
        "pmi_faith": plain,
        "pmi_faith_evidence": PMIFaith(model=plain.model, tokenizer=plain.tokenizer, evidence=True),
        "faith_judge": FaithJudge(model=args.model),
    }
    wall, cpu = dict.fromkeys(sides, 0.0), dict.fromkeys(sides, 0.0)
    names = list(sides)
    for number, start in enumerate(range(0, len(rows), args.chunk)):
        chunk = rows[start : start + args.chunk]
        for name in names[number % len(names) :] + names[: number % len(names)]:
            began, began_cpu = time.perf_counter(), time.process_time()
            sides[name].compute_rows(
                [r.document for r in chunk], [r.history for r in chunk], [r.response for r in chunk]
            )
            wall[name] += time.perf_counter() - began
            cpu[name] += time.process_time() - began_cpu
    figures = {
        "rows": len(rows),
        "model": args.model,
        "wall_seconds": {k: round(v, 2) for k, v in wall.items()},
        "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
        "evidence_over_pmi_faith_cpu": round(cpu["pmi_faith_evidence"] / cpu["pmi_faith"], 3),
        "evidence_over_pmi_faith_wall": round(wall["pmi_faith_evidence"] / wall["pmi_faith"], 3),
        "judge_over_pmi_faith_cpu": round(cpu["faith_judge"] / cpu["pmi_faith"], 3),
    }
    for name in sides:
        print(f"{name}: {wall[name]:.1f} s wall, {cpu[name]:.1f} s CPU for {len(rows)} rows")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
