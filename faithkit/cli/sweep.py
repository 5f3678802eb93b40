"""``faithkit sweep``: a grid of decoding strategies on a dev set, judged with intervals, tabulated, plotted, resumable."""

from __future__ import annotations

import logging
from dataclasses import fields

from ..numbers import finite_float
from ..paths import PathArg
from ..jobs import is_main_process
from .options import add_dtype_option, add_input_columns, refuse_writing_inputs

logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    from ..decoding import PMI, SEARCHES, GenerationOptions
    from ..decoding.options import add_flags, default_grid
    from ..metrics.registry import MEASURES
    from ..sweep.config import GENERATION, METRICS

    parser = subparsers.add_parser(
        "sweep",
        help="decoding strategies over a grid, judged for faithfulness, relevance and fluency",
        description="Generate responses for every cell of a grid of decoding strategies (plain decoding, "
        "PMI-DECODE's alpha x top_p, …), always with plain decoding as the baseline, and judge them: "
        "PMI-FAITH and fluency (the judge's log P(response | history) per token) under --judge (best "
        "another model than the generator, which PMI-DECODE steered towards its own PMI), Q² when "
        "asked, knowledge precision, relevance to the gold response (sacrebleu corpus BLEU, token F1) "
        "and the responses' length, empty and repeated shares; each with a 95% bootstrap interval over "
        "contexts and a paired permutation test against the baseline. The gold response is "
        "--gold-column, else a gold/reference column, else the input's response column; without one "
        "the relevance columns stay empty and a warning says so. Writes to --out: cells/<cell>.jsonl "
        "(responses), scores.jsonl (per-response PMI-FAITH with token contributions; 'faithkit explain "
        "--metric pmi-faith --input' draws it), q2.jsonl, sweep.csv, best.json, heatmaps/<measure>.png "
        "and report.html; prints every cell's measures (faithfulness, relevance and fluency with p "
        "against the baseline and ▲/▼ when significant; cells that decode alike on one line; the cells "
        "the rule excluded, and why; docs/reports.md tells how to read them) and the PMI-DECODE grid in "
        "the layout of the paper's Table 5. Rerunning the same command resumes where it stopped. Settings come from "
        "--config FILE.yaml (keys named like the options, e.g. top_p, gold_column; 'strategies:' a "
        "list of strategies each with its own grid) and the options given, which win; without "
        "--config the options alone define the sweep.",
    )
    parser.add_argument(
        "--config",
        type=PathArg("text"),
        help="YAML file of settings, e.g. configs/sweep/smollm2-q2wow.yaml; "
        "'${data}/…' paths start at the benchmark data root",
    )
    parser.add_argument(
        "--generator", type=PathArg("model"), help="model to decode with: hub id, local folder or offline name"
    )
    parser.add_argument(
        "--judge",
        type=PathArg("model"),
        help="causal LM for PMI-FAITH (default bigscience/bloom-560m, from the hub; offline: gemma3-270m)",
    )
    parser.add_argument(
        "--input",
        type=PathArg("rows"),
        help="dev rows with a document and a history (.jsonl, .csv, .tsv, .parquet, "
        "a save_to_disk folder or hf:OWNER/NAME with --split)",
    )
    parser.add_argument(
        "--out", type=PathArg("output folder"), help="output folder; rerunning with the same folder resumes"
    )
    parser.add_argument("--restart", action="store_true", help="delete the sweep's earlier outputs in --out first")
    grid = parser.add_argument_group("grid and decoding")
    from ..decoding.strategies import written_forms

    grid.add_argument(
        "--strategies",
        help="comma-separated strategies, each over its default grid but for the "
        "parameters written, e.g. plain,pmi,cad:alpha=1,pmi:alpha=0.5,top_p=0.9 "
        f"(default pmi), of {written_forms()}; a config's 'strategies:' gives "
        "each its own grid",
    )
    grid.add_argument(
        "--chosen",
        help="comma-separated best.json files of earlier sweeps: each one's chosen cell "
        "joins the strategies (choose on dev rows, decode other rows)",
    )
    pmi_grid = default_grid(PMI)
    grid.add_argument(
        "--alpha", help=f"PMI-DECODE weights, comma-separated (default {','.join(f'{v:g}' for v in pmi_grid['alpha'])})"
    )
    grid.add_argument(
        "--top-p",
        help=f"PMI-DECODE nucleus sizes, comma-separated (default {','.join(f'{v:g}' for v in pmi_grid['top_p'])})",
    )
    grid.add_argument(
        "--decoding",
        choices=SEARCHES,
        help="search of the baseline and of every strategy that names "
        "none: greedy (default), beam, sample or beam_sample",
    )
    add_flags(grid, GenerationOptions, names=GENERATION, defaults=False)
    grid.add_argument("--limit", type=int, help="use only the first N rows of --input")
    judging = parser.add_argument_group("judging")
    judging.add_argument(
        "--metrics",
        help=f"comma-separated, of {', '.join(METRICS)} (default faith-judge,pmi-faith,lexical; "
        "words, empty and repeated are always measured)",
    )
    judging.add_argument(
        "--q2-preset", choices=["offline"], help="Q² on the offline models instead of the paper's hub models"
    )
    judging.add_argument(
        "--gold-column", help="column with the gold response (default: gold/reference, else the response column)"
    )
    judging.add_argument(
        "--faithfulness",
        choices=list(MEASURES),
        metavar="MEASURE",
        help="measure best.json maximises and Table 5 shows first (default faith_judge when "
        f"faith-judge is measured, else pmi_faith); a MEASURE is one of {', '.join(MEASURES)}",
    )
    judging.add_argument(
        "--relevance",
        choices=list(MEASURES),
        metavar="MEASURE",
        help="measure bounded by the baseline's and shown second (default bleu)",
    )
    judging.add_argument(
        "--tolerance",
        type=finite_float,
        help="how far below the baseline's relevance the chosen cell may fall (default 1.0, in the measure's units)",
    )
    judging.add_argument(
        "--fluency",
        choices=list(MEASURES),
        metavar="MEASURE",
        help="measure bounded by the baseline's, so degenerate cells are not chosen (default: fluency "
        "when pmi-faith is measured)",
    )
    judging.add_argument(
        "--fluency-tolerance",
        type=finite_float,
        help="how far below the baseline's fluency the chosen cell may fall (default 1.0 nats per token)",
    )
    judging.add_argument(
        "--significance", type=finite_float, help="level of the paired test best.json reports (default 0.05)"
    )
    judging.add_argument("--resamples", type=int, help="bootstrap resamples and permutations (default 1000)")
    judging.add_argument("--report-contexts", type=int, help="contexts shown in report.html (default 8)")
    parser.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    add_dtype_option(parser)
    add_input_columns(parser, response=False)
    parser.set_defaults(run=run)


def run(args) -> int:
    from ..paths import check_model_folder
    from ..sweep import SweepConfig, load_config, run_sweep
    from ..sweep.config import GENERATION

    names = [field.name for field in fields(SweepConfig) if field.name != "generation"] + list(GENERATION)
    overrides = {name: getattr(args, name, None) for name in names}
    config = load_config(args.config, overrides)
    refuse_writing_inputs([config.input_path()], "--out", folder=config.out)
    for model in filter(None, (config.generator, config.judge)):  # from the config file too, before any row
        check_model_folder(model)
    result = run_sweep(config, restart=args.restart)
    if is_main_process():
        print(result.markdown)
    logger.info("sweep.csv, best.json, heatmaps/ and report.html -> %s", result.out)
    return 0
