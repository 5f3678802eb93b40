"""``faithkit sweep``: a grid of decoding strategies on a dev set, judged with intervals, tabulated, plotted, resumable."""

from __future__ import annotations

import argparse
import logging
from dataclasses import fields

from ..paths import PathArg
from ..jobs import is_main_process
from .declared_files import Files, Output, declare_files
from .options import add_dtype_option, add_input_columns

logger = logging.getLogger(__name__)

JUDGING = (
    "metrics",
    "q2_preset",
    "gold_column",
    "faithfulness",
    "relevance",
    "tolerance",
    "fluency",
    "fluency_tolerance",
    "significance",
    "resamples",
    "report_contexts",
)
"""The :class:`~faithkit.sweep.SweepConfig` fields in the help's "judging" group."""


def register(subparsers) -> None:
    from ..decoding import GenerationOptions
    from ..options import add_flags
    from ..sweep import SweepConfig
    from ..sweep.config import GENERATION

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
        "--metric pmi-faith --input' draws it), q2.jsonl, candidates/ (rerank cells' candidates), sweep.csv, best.json, heatmaps/<measure>.png "
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
    add_flags(parser, SweepConfig, names=("generator", "judge", "input", "out"), unset=None)
    parser.add_argument("--restart", action="store_true", help="delete the sweep's earlier outputs in --out first")
    grid = parser.add_argument_group("grid and decoding")
    add_flags(
        grid, SweepConfig, names=("strategies", "chosen", "alpha", "top_p", "decoding"), unset=None, lists="comma"
    )
    add_flags(grid, GenerationOptions, names=GENERATION, defaults=SweepConfig.generation, unset=argparse.SUPPRESS)
    add_flags(grid, SweepConfig, names=("limit", "max_cells"), unset=None)
    grid.add_argument(
        "--allow-large-grid",
        action="store_true",
        default=None,
        help="run a grid of more than --max-cells cells (refused otherwise, before any work)",
    )
    judging = parser.add_argument_group("judging")
    add_flags(judging, SweepConfig, names=JUDGING, unset=None, lists="comma")
    add_flags(parser, SweepConfig, names=("device",), unset=None)
    add_dtype_option(parser)
    add_input_columns(parser, response=False)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(
            reads=lambda args: [args.config, *_config(args).reads()],
            writes=lambda args: [Output("--out", _config(args).out, folder=True)],
        ),
    )


def _config(args):
    """The sweep's settings: --config's, with the options given winning."""
    from ..sweep import SweepConfig, load_config
    from ..sweep.config import GENERATION

    names = [field.name for field in fields(SweepConfig) if field.name != "generation"] + list(GENERATION)
    return load_config(args.config, {name: getattr(args, name, None) for name in names})


def run(args) -> int:
    from ..paths import check_model_folder
    import shlex

    from ..jobs import JobInterrupted
    from ..sweep import run_sweep

    config = _config(args)
    for model in filter(None, (config.generator, config.judge)):  # from the config file too, before any row
        check_model_folder(model)
    try:
        result = run_sweep(config, restart=args.restart)
    except JobInterrupted as interrupted:  # say the command that continues it (--restart would start over)
        argv = [arg for arg in getattr(args, "command_line", None) or () if arg != "--restart"]
        raise JobInterrupted(f"{interrupted}: faithkit {shlex.join(argv)}" if argv else str(interrupted)) from None
    if is_main_process():
        print(result.markdown)
    logger.info("sweep.csv, best.json, heatmaps/ and report.html -> %s", result.out)
    return 0
