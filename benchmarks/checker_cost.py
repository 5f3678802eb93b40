"""Scoring cost of the claim checker against PMI-FAITH, per row, on the same rows and the same CPU threads.

Rows: BEGIN dev (``--corpus begin``) or the rated Topical-Chat valid_rare generations (``--corpus rated``:
``benchmarks/data/ratings/rated-valid_rare.jsonl``, SmolLM2's responses to the dialogue models' test split, documents
of one to three sections). The checker runs twice, with its
prompts' shared prefixes (a response's sentences share each window's key/value cache) and without, and both must
give the same scores. All are loaded first (untimed); then each scores the same rows, alternating twice (checker,
checker without sharing, PMI-FAITH, and again) so that a load on the machine falls on all; the figures are their
summed wall and CPU (process) seconds per row and the ratios. The last line is one JSON object.

    python benchmarks/checker_cost.py --corpus rated --rows 24 --threads 1
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from faithkit.metrics.claim_checkers import ClaimChecker
from faithkit.metrics.pmi_faith import PMIFaith

from judge_features import dev_rows


RATED = Path(__file__).resolve().parent / "data" / "ratings" / "rated-valid_rare.jsonl"


def rated_rows(count: int) -> tuple[list[str], list, list[str]]:
    """The first ``count`` rated valid_rare responses, with their documents and histories."""
    with open(RATED, encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines][:count]
    return [r["document"] for r in rows], [r["history"] for r in rows], [r["response"] for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("begin", "rated"), default="rated")
    parser.add_argument("--rows", type=int, default=24, help="rows (BEGIN: split over WoW, CMU-DoG, TC)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--adapter", default=None, help="checker adapter folder (default: faithkit-checker's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.corpus == "begin":
        rows = [row for _, _, row in dev_rows(("wow", "cmu", "tc"), args.rows // 3 + 1)][: args.rows]
        columns = ([r.document for r in rows], [r.history for r in rows], [r.response for r in rows])
    else:
        columns = rated_rows(args.rows)
    unshared = ClaimChecker("faithkit-checker", nli_model=args.adapter, dtype=args.dtype)
    unshared.support.share_prefixes = False
    metrics = {
        "checker": ClaimChecker("faithkit-checker", nli_model=args.adapter, dtype=args.dtype),
        "checker_unshared": unshared,
        "pmi_faith": PMIFaith(model="smollm2-135m", dtype=args.dtype),
    }
    wall, cpu, scored = dict.fromkeys(metrics, 0.0), dict.fromkeys(metrics, 0.0), {}
    for _ in range(2):
        for name, metric in metrics.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            scored[name] = metric.compute_rows(*columns)
            wall[name] += time.perf_counter() - started
            cpu[name] += time.process_time() - started_cpu
    keys = metrics["checker"].score_keys[2:]
    difference = max(
        abs(a[key] - b[key]) for a, b in zip(scored["checker"], scored["checker_unshared"]) for key in keys
    )
    per_row = 2 * len(columns[0])
    figures = {
        "corpus": args.corpus,
        "rows": len(columns[0]),
        "threads": args.threads,
        "sentences_per_row": round(sum(len(r["sentences"]) for r in scored["checker"]) / len(columns[0]), 2),
        **{f"{name}_seconds_per_row": round(wall[name] / per_row, 3) for name in metrics},
        **{f"{name}_cpu_seconds_per_row": round(cpu[name] / per_row, 3) for name in metrics},
        "checker_vs_pmi_faith": round(wall["checker"] / wall["pmi_faith"], 3),
        "checker_vs_pmi_faith_cpu": round(cpu["checker"] / cpu["pmi_faith"], 3),
        "sharing_speedup_cpu": round(cpu["checker_unshared"] / cpu["checker"], 3),
        "max_score_difference_shared_vs_unshared": difference,
    }
    print(
        f"checker {figures['checker_cpu_seconds_per_row']} CPU s/row (without sharing "
        f"{figures['checker_unshared_cpu_seconds_per_row']}), PMI-FAITH {figures['pmi_faith_cpu_seconds_per_row']}: "
        f"{figures['checker_vs_pmi_faith_cpu']}x; shared vs unshared scores differ by at most {difference:.2e}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
