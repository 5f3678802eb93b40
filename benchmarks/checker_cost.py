"""Scoring cost of the claim checker against PMI-FAITH, per row, on the same BEGIN dev rows and the same CPU threads.

Both metrics are loaded first (untimed); then each scores the same rows, alternating twice (checker,
PMI-FAITH, checker, PMI-FAITH) so that a load on the machine falls on both; the figure is the ratio of their
summed times. The last line is one JSON object.

    python benchmarks/checker_cost.py --rows 64 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from faithkit.metrics.claim_checkers import ClaimChecker
from faithkit.metrics.pmi_faith import PMIFaith

from judge_features import dev_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=64, help="rows of each BEGIN source (WoW, CMU-DoG, TC)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--adapter", default=None, help="checker adapter folder (default: the one faithkit ships)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [row for _, _, row in dev_rows(("wow", "cmu", "tc"), args.rows // 3 + 1)][: args.rows]
    columns = ([r.document for r in rows], [r.history for r in rows], [r.response for r in rows])
    metrics = {
        "checker": ClaimChecker("faithkit-checker", nli_model=args.adapter, dtype=args.dtype),
        "pmi_faith": PMIFaith(model="smollm2-135m", dtype=args.dtype),
    }
    seconds = dict.fromkeys(metrics, 0.0)
    for _ in range(2):
        for name, metric in metrics.items():
            start = time.perf_counter()
            metric.compute_rows(*columns)
            seconds[name] += time.perf_counter() - start
    figures = {
        "rows": len(rows),
        "threads": args.threads,
        "checker_seconds_per_row": round(seconds["checker"] / (2 * len(rows)), 4),
        "pmi_faith_seconds_per_row": round(seconds["pmi_faith"] / (2 * len(rows)), 4),
        "ratio": round(seconds["checker"] / seconds["pmi_faith"], 3),
    }
    print(
        f"checker {figures['checker_seconds_per_row']} s/row, PMI-FAITH {figures['pmi_faith_seconds_per_row']} s/row: "
        f"{figures['ratio']}x"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
