"""PMI-FAITH in float32, bfloat16 and float16 on the same BEGIN dev rows: how far half precision moves the scores.

Scores the first ``--limit`` rows of BEGIN's WoW dev file with one model in each precision
(``faithkit.serving.models.load(name, dtype=...)``) and compares each with float32: the largest and the
mean absolute difference of PMI-FAITH, and Spearman's rank correlation. A precision whose logits
overflow (Gemma 3 in float16) stops with faithkit's PrecisionError; that is reported as its
``error``. The last line printed is one JSON object.

    python benchmarks/precision.py --model gemma3-270m --limit 16
    python benchmarks/precision.py --model smollm2-135m --limit 16
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from scipy.stats import spearmanr

from faithkit.serving import models
from faithkit.data import Columns, data_root, read_rows
from faithkit.errors import PrecisionError
from faithkit.metrics import PMIFaith


def scores(model_name: str, dtype: str, rows) -> list[float]:
    model, tokenizer = models.load(model_name, dtype=dtype)
    metric = PMIFaith(model=model, tokenizer=tokenizer, unconditional=False)
    return [
        row["pmi"]
        for row in metric.compute_rows(
            [r.document for r in rows], [r.history for r in rows], [r.response for r in rows]
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--limit", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = list(read_rows(data_root() / "begin" / "begin_dev_wow.tsv", Columns()))[: args.limit]
    figures: dict = {"model": args.model, "rows": len(rows)}
    started = time.perf_counter()
    reference = scores(args.model, "float32", rows)
    for dtype in ("bfloat16", "float16"):
        try:
            values = scores(args.model, dtype, rows)
        except PrecisionError as error:
            figures[dtype] = {"error": str(error)}
            continue
        differences = [abs(a - b) for a, b in zip(values, reference)]
        figures[dtype] = {
            "all_finite": all(v == v and abs(v) != float("inf") for v in values),
            "max_abs_diff": round(max(differences), 4),
            "mean_abs_diff": round(sum(differences) / len(differences), 4),
            "spearman": round(float(spearmanr(values, reference).statistic), 4),
        }
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
