"""How much faster is ``faithkit sweep`` than generating and scoring each cell on its own?

A mixed-strategy grid (:data:`GRID`: plain greedy and 4-beam search, PMI-DECODE at alpha 0
(which greedy search makes plain decoding), (0.25, 0.6) and (0.5, 1), CAD at alpha 0.5 and 1,
AdaCAD) with the models and data of configs/sweep/smollm2-q2wow.yaml (SmolLM2-135M-Instruct
generating, PMI-FAITH under gemma3-270m judging) on the first ``--contexts`` rows of
dodeca_consistent.csv:

* sweep: :func:`faithkit.sweep.run_sweep` end to end into a fresh folder: model loading
  (after one untimed load of each model, so that neither side pays the process's first imports
  of their model code), grid generation (each batch's prompts prefilled once for all cells, cells that decode alike
  once, the greedy cells' decodes in one generate call), one judge call over every cell's responses, lexical measures, intervals and paired
  tests, sweep.csv, heatmaps and report.html;
* per cell: with both models already loaded (not timed), one ``generate()`` and one
  ``PMIFaith.compute`` per cell, as a user running ``faithkit generate --strategy …`` and
  ``faithkit score`` per cell would (same batch size, same judge settings: PMI-FAITH without
  the two unconditional views, which ``faithkit score`` would add).

Both must give the same responses, token for token, and the same PMI-FAITH within 1e-5.
The last line printed is one JSON object.

    python benchmarks/sweep_throughput.py --contexts 16 --threads 2
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

from faithkit.serving import models
from faithkit.decoding import shared_decode, generate
from faithkit.metrics import PMIFaith
from faithkit.sweep import load_config, run_sweep
from faithkit.sweep import judging
from faithkit.sweep import run as sweep_run

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "sweep" / "smollm2-q2wow.yaml"
GRID = [
    {"name": "plain", "search": ["greedy", "beam"]},
    {"name": "pmi", "alpha": [0, 0.25], "top_p": [0.6]},
    {"name": "pmi", "alpha": [0.5], "top_p": [1]},
    {"name": "cad", "alpha": [0.5, 1]},
    {"name": "adacad"},
]


class Clock:
    """Wall and CPU seconds since it started: on a shared machine CPU time is the steadier measure."""

    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def add(totals: dict, key: str, clock: Clock) -> None:
    wall, cpu = clock.read()
    totals[key] = totals.get(key, 0.0) + wall
    totals[key + "_cpu"] = totals.get(key + "_cpu", 0.0) + cpu


def timed(function, totals: dict, key: str):
    """``function`` that adds its wall and CPU time to ``totals[key]`` and ``totals[key + "_cpu"]``."""

    def wrapper(*args, **kwargs):
        clock = Clock()
        try:
            return function(*args, **kwargs)
        finally:
            add(totals, key, clock)

    return wrapper


def per_cell(config, contexts, totals: dict) -> tuple[dict, dict]:
    """Every cell generated, then scored, on its own; models loaded beforehand (not timed)."""
    model, tokenizer = models.load(config.generator)
    judge = PMIFaith(model=config.scoring_model, unconditional=False)
    documents, histories = [c.document for c in contexts], [c.history for c in contexts]
    generate(model, tokenizer, documents[:1], histories[:1], max_new_tokens=2)  # warm-up, as the sweep's first batch
    responses, scores = {}, {}
    for cell in config.cells():
        clock = Clock()
        texts = generate(
            model,
            tokenizer,
            documents,
            histories,
            cell.strategy,
            num_beams=config.generation.num_beams if cell.search == "beam" else 1,
            batch_size=config.generation.batch_size,
            max_new_tokens=config.generation.max_new_tokens,
        )
        add(totals, "generate", clock)
        clock = Clock()
        kept = [i for i, text in enumerate(texts) if text.strip()]  # faithkit score: an empty response is an error
        pmi = judge.compute(
            documents=[documents[i] for i in kept],
            histories=[histories[i] for i in kept],
            responses=[texts[i] for i in kept],
        )["pmi"]
        add(totals, "score", clock)
        responses[cell] = dict(zip((c.id for c in contexts), texts))
        scores[cell] = {contexts[i].id: value for i, value in zip(kept, pmi)}
    return responses, scores


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=16, help="dev rows (default 16)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    parser.add_argument("--out", help="sweep folder (default: a temporary folder, deleted afterwards)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # the sweep's progress lines

    folder = Path(args.out or tempfile.mkdtemp(prefix="sweep_throughput_"))
    import yaml

    settings = {
        key: value for key, value in yaml.safe_load(CONFIG.read_text()).items() if key not in ("alpha", "top_p")
    }
    config = load_config(None, {**settings, "limit": args.contexts, "out": str(folder), "strategies": GRID})
    contexts = sweep_run.read_contexts(config)

    for name in (config.generator, config.scoring_model):  # the first load imports the model code: neither side's work
        models.load(name)
    sweep_totals: dict = {}
    sweep_run.generate_cells = timed(sweep_run.generate_cells, sweep_totals, "generate")
    judging.run_pass = timed(judging.run_pass, sweep_totals, "score")
    clock = Clock()
    result = run_sweep(config, restart=True)
    sweep_seconds, sweep_cpu = clock.read()
    print(result.markdown, flush=True)

    cell_totals: dict = {}
    clock = Clock()
    responses, scores = per_cell(config, contexts, cell_totals)
    per_cell_seconds, per_cell_cpu = clock.read()

    swept = {record["id"]: record for record in sweep_run.read_results(folder / "scores.jsonl")}
    identical, largest = True, 0.0
    for cell in config.cells():
        for context in contexts:
            record = swept[f"{shared_decode(cell).label}/{context.id}"]
            identical &= record["response"] == responses[cell][context.id]
            if context.id in scores[cell]:
                largest = max(largest, abs(record["pmi"] - scores[cell][context.id]))
    assert identical, "the sweep's responses differ from per-cell generate()"
    assert largest <= 1e-5, f"PMI-FAITH differs by {largest:.2e}"
    if not args.out:
        shutil.rmtree(folder)
    responses_scored = sum(len(s) for s in scores.values())
    distinct = len({(c, r) for cell in config.cells() for c, r in responses[cell].items() if r.strip()})
    print(
        f"wall: sweep {sweep_seconds:.1f} s (generate {sweep_totals['generate']:.1f}, score "
        f"{sweep_totals['score']:.1f}); per cell {per_cell_seconds:.1f} s (generate {cell_totals['generate']:.1f}, "
        f"score {cell_totals['score']:.1f}); CPU: sweep {sweep_cpu:.1f} s, per cell {per_cell_cpu:.1f} s; "
        f"{responses_scored} responses, {distinct} distinct"
    )
    print(
        json.dumps(
            {
                "speedup": round(per_cell_seconds / sweep_seconds, 3),
                "identical": identical,
                "cells": len(config.cells()),
                "contexts": len(contexts),
                "cpu_speedup": round(per_cell_cpu / sweep_cpu, 3),
                "sweep_seconds": round(sweep_seconds, 1),
                "per_cell_seconds": round(per_cell_seconds, 1),
                "generate_speedup": round(cell_totals["generate"] / sweep_totals["generate"], 3),
                "score_speedup": round(cell_totals["score"] / sweep_totals["score"], 3),
                "generate_cpu_speedup": round(cell_totals["generate_cpu"] / sweep_totals["generate_cpu"], 3),
                "score_cpu_speedup": round(cell_totals["score_cpu"] / sweep_totals["score_cpu"], 3),
                "max_pmi_difference": largest,
                "responses": responses_scored,
                "distinct_responses": distinct,
                "threads": args.threads,
                "load_average": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
