"""``faithkit sweep``: a grid of decoding strategies on a dev set, judged with intervals, tabulated, plotted, resumable."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, fields

from ..settings.options import check_paths, option
from ..data.paths import PathArg
from ..data.jobs import is_main_process
from ..sweep.config import SweepConfig
from ..sweep.judging import served_judges
from .declared_files import Files, Output, declare_files
from .shared_flags import add_dtype_option, add_input_columns, check_models

logger = logging.getLogger(__name__)

JUDGING = (
    "metrics",
    "q2_preset",
    "server",
    "served_model",
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


@dataclass
class SweepRun:
    config: str | None = option(
        None,
        "YAML file of settings, e.g. configs/sweep/smollm2-q2wow.yaml; '${data}/…' paths start at the benchmark "
        "data root",
        flag_type=PathArg("text"),
        metavar="FILE",
    )
    restart: bool = option(False, "delete the sweep's earlier outputs in --out first")


def register(subparsers) -> None:
    from ..decoding import GenerationOptions
    from ..settings.options import add_flags
    from ..sweep.config import GENERATION

    parser = subparsers.add_parser(
        "sweep",
        usage="faithkit sweep --generator MODEL --scoring-model MODEL --input ROWS --out DIR [options]\n"
        "       faithkit sweep --config FILE.yaml [options]",
        help="decoding strategies over a grid, judged for faithfulness, relevance and fluency",
        description="Decode every cell of a grid of decoding strategies (plain decoding the baseline) and judge "
        "the responses under --scoring-model for faithfulness, fluency, knowledge precision and relevance to the gold, "
        "each with a 95% interval and a paired test against the baseline. Writes cells/, scores.jsonl, "
        "sweep.csv, best.json, heatmaps/ and report.html to --out (a rerun resumes). --config's keys are named "
        "like the options, which win. See docs/sweeps.md and docs/reports.md.",
    )
    run_group = parser.add_argument_group("what to run")
    add_flags(run_group, SweepRun, names=("config",))
    add_flags(run_group, SweepConfig, names=("generator", "scoring_model", "input", "out"), unset=None)
    add_flags(run_group, SweepRun, names=("restart",))
    add_flags(run_group, SweepConfig, names=("limit",), unset=None)
    grid = parser.add_argument_group("grid and decoding")
    add_flags(grid, SweepConfig, names=("strategies", "chosen", "alpha", "top_p"), unset=None, lists="comma")
    add_flags(grid, SweepConfig, names=("search",), unset=None)
    add_flags(grid, GenerationOptions, names=GENERATION, defaults=SweepConfig.generation, unset=argparse.SUPPRESS)
    add_flags(grid, SweepConfig, names=("max_cells", "allow_large_grid"), unset=None)
    judging = parser.add_argument_group("judging and choosing")
    add_flags(judging, SweepConfig, names=JUDGING, unset=None, lists="comma")
    device = parser.add_argument_group("device")
    add_flags(device, SweepConfig, names=("device",), unset=None)
    add_dtype_option(device)
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
    from ..sweep import load_config
    from ..sweep.config import GENERATION

    names = [field.name for field in fields(SweepConfig) if field.name != "generation"] + list(GENERATION)
    config = load_config(args.config, {name: getattr(args, name, None) for name in names})
    check_paths(config, f"config file {args.config}: " if args.config else "")  # the file's paths as the flags'
    return config


def run(args) -> int:
    config = _config(args)
    served_judges(config)  # a served judge's server is asked, and a missing --server named, before any model loads
    check_models({"--generator": config.generator, "--scoring-model": config.scoring_model})  # from the config file too
    from ..sweep import run_sweep  # torch, scipy: after the checks

    result = run_sweep(config, restart=args.restart)  # stopped, faithkit.cli.main says the command that continues
    if is_main_process():
        print(result.markdown)
    logger.info("sweep.csv, best.json, heatmaps/ and report.html -> %s", result.out)
    return 0
