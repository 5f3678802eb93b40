"""Greedy CAD(alpha) and greedy PMI-DECODE(alpha / (1 + alpha), top_p=1) choose the same tokens: measured on real rows.

Both scores are ``log P(y|d,h) - w log P(y|h)`` up to a positive factor (CAD's is ``1 + alpha``
times PMI-DECODE's), so greedy search picks the same token and beam search ranks beams the
same. This decodes the first ``--limit`` contexts of the Q² WoW dodeca set with SmolLM2-135M-
Instruct (chat template) four ways in one grid — ``cad`` alpha=1 and ``pmi`` alpha=0.5,
top_p=1, each under greedy and 4-beam search — and counts the contexts whose responses differ.
The last line printed is one JSON object.

    python benchmarks/cad_pmi_identity.py --limit 40
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.serving import models
from faithkit.data import Columns, data_root, read_rows
from faithkit.decoding import CAD, PMI, Cell, generate_grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--alpha", type=float, default=1.0, help="CAD's alpha; PMI-DECODE runs at alpha / (1 + alpha)")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--num-beams", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = list(read_rows(data_root() / "q2_wow" / "dodeca_consistent.csv", Columns(required=("document",))))
    rows = rows[: args.limit]
    model, tokenizer = models.load("smollm2-135m")
    cad, pmi = CAD(alpha=args.alpha), PMI(alpha=args.alpha / (1 + args.alpha), top_p=1.0)
    cells = [Cell(cad, "greedy"), Cell(pmi, "greedy"), Cell(cad, "beam"), Cell(pmi, "beam")]
    started, cpu = time.perf_counter(), time.process_time()
    grid = generate_grid(
        model,
        tokenizer,
        [r.document for r in rows],
        [r.history for r in rows],
        cells,
        num_beams=args.num_beams,
        max_new_tokens=args.max_new_tokens,
        batch_size=8,
    )
    figures = {
        "contexts": len(rows),
        "cad_alpha": cad.alpha,
        "pmi_alpha": pmi.alpha,
        "pmi_top_p": pmi.top_p,
        "max_new_tokens": args.max_new_tokens,
        "num_beams": args.num_beams,
        "greedy_identical": sum(a == b for a, b in zip(grid[0], grid[1])),
        "beam_identical": sum(a == b for a, b in zip(grid[2], grid[3])),
        "greedy_differs_from_beam": sum(a != b for a, b in zip(grid[0], grid[2])),
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
    }
    for label, cell in (("greedy", 0), ("beam", 2)):
        for i, (a, b) in enumerate(zip(grid[cell], grid[cell + 1])):
            if a != b:
                print(f"{label} context {rows[i].id}: cad {a!r} | pmi {b!r}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
