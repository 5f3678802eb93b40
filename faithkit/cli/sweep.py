"""``faithkit sweep``: a PMI-DECODE alpha x top_p grid on a dev set, judged, tabulated, plotted, resumable."""

from __future__ import annotations

import argparse
import logging
from dataclasses import fields

from .options import add_input_columns, is_main_process

logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    from ..sweep.config import DECODINGS, MEASURES, SWEEP_METRICS

    parser = subparsers.add_parser(
        "sweep", help="PMI-DECODE over an alpha x top_p grid, judged for faithfulness and relevance",
        description="Generate responses for every (alpha, top_p) cell of a grid, always with the plain baseline "
                    "(alpha 0, top_p 1), and judge them: PMI-FAITH under --judge (best another model than the "
                    "generator, which PMI-DECODE steered towards its own PMI), Q² when asked, knowledge "
                    "precision, and relevance to the gold response (sacrebleu corpus BLEU, token F1). The gold "
                    "response is --gold-column, else a gold/reference column, else the input's response column; "
                    "without one the relevance columns stay empty and a warning says so. Writes to --out: "
                    "cells/<cell>.jsonl (responses), scores.jsonl (per-response PMI-FAITH with token "
                    "contributions; 'faithkit explain --metric pmi-faith --input' draws it), q2.jsonl, sweep.csv, "
                    "best.json, heatmaps/<measure>.png and report.html; prints the grid in the layout of the "
                    "paper's Table 5. Rerunning the same command resumes where it stopped. Settings come from "
                    "--config FILE.yaml (keys named like the options, e.g. top_p, gold_column) and the options "
                    "given, which win; without --config the options alone define the sweep.",
    )
    parser.add_argument("--config", help="YAML file of settings, e.g. configs/sweep/smollm2-q2wow.yaml; "
                                         "'${data}/…' paths start at the benchmark data root")
    parser.add_argument("--generator", help="model to decode with: hub id, local folder or offline name")
    parser.add_argument("--judge", help="causal LM for PMI-FAITH (default bigscience/bloom-560m)")
    parser.add_argument("--input", help="dev rows with a document and a history (.jsonl, .csv, .tsv, .parquet, "
                                        "a save_to_disk folder or hf:OWNER/NAME with --split)")
    parser.add_argument("--out", help="output folder; rerunning with the same folder resumes")
    parser.add_argument("--restart", action="store_true", help="delete the sweep's earlier outputs in --out first")
    grid = parser.add_argument_group("grid and decoding")
    grid.add_argument("--alpha", help="PMI weights in [0, 1], comma-separated (default 0,0.25,0.5,1)")
    grid.add_argument("--top-p", help="nucleus sizes in (0, 1], comma-separated (default 0.6,0.75,0.9,1)")
    grid.add_argument("--decoding", choices=DECODINGS, help="greedy (default), beam or sample")
    grid.add_argument("--num-beams", type=int, help="beams for --decoding beam (default 4)")
    grid.add_argument("--temperature", type=float, help="--decoding sample: temperature on the PMI-DECODE scores")
    grid.add_argument("--top-k", type=int, help="--decoding sample: draw among the k best PMI-DECODE scores")
    grid.add_argument("--seed", type=int, help="--decoding sample: each row draws from a generator seeded by this "
                                               "and its id (default 0), so resuming changes nothing")
    grid.add_argument("--max-new-tokens", type=int, help="longest response in tokens (default 40)")
    grid.add_argument("--batch-size", type=int, help="contexts per generate call (default 8)")
    grid.add_argument("--max-context-tokens", type=int, help="cut longer contexts, keeping their end (default and most: what the "
                      "model's context window leaves beside --max-new-tokens)")
    grid.add_argument("--chat", action=argparse.BooleanOptionalAction, default=None,
                      help="use the tokenizer's chat template (default: when the generator is decoder-only and "
                           "has one)")
    grid.add_argument("--limit", type=int, help="use only the first N rows of --input")
    judging = parser.add_argument_group("judging")
    judging.add_argument("--metrics", help=f"comma-separated, of {', '.join(SWEEP_METRICS)} "
                                           "(default pmi-faith,lexical)")
    judging.add_argument("--q2-preset", choices=["offline"], help="Q² on the offline models instead of the "
                                                                  "paper's hub models")
    judging.add_argument("--gold-column", help="column with the gold response (default: gold/reference, else the "
                                               "response column)")
    judging.add_argument("--faithfulness", choices=list(MEASURES),
                         help="measure best.json maximises and Table 5 shows first (default pmi_faith)")
    judging.add_argument("--relevance", choices=list(MEASURES),
                         help="measure bounded by the baseline's and shown second (default bleu)")
    judging.add_argument("--tolerance", type=float, help="how far below the baseline's relevance the chosen cell "
                                                         "may fall (default 1.0, in the measure's units)")
    judging.add_argument("--report-contexts", type=int, help="contexts shown in report.html (default 8)")
    parser.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    add_input_columns(parser, response=False)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..sweep import SweepConfig, load_config, run_sweep

    overrides = {field.name: getattr(args, field.name, None) for field in fields(SweepConfig)}
    config = load_config(args.config, overrides)
    result = run_sweep(config, restart=args.restart)
    if is_main_process():
        print(result.markdown)
    logger.info("sweep.csv, best.json, heatmaps/ and report.html -> %s", result.out)
    return 0
