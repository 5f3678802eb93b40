"""``faithkit generate``: a decoding strategy's responses for every row of a file, written as they finish, resumable."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass

from ..decoding.strategies import STRATEGIES
from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    add_device_option,
    add_dtype_option,
    add_input_columns,
    add_job_options,
    check_models,
    columns_from_args,
    job_options,
)

logger = logging.getLogger(__name__)


@dataclass
class GenerateFlags:
    model: str | None = option(
        None, "causal or seq2seq LM: hub id, local folder or offline name", flag_type=PathArg("model"), required=True
    )
    input: str | None = option(
        None,
        "rows with a document and a history (.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or hf:OWNER/NAME "
        "with --split)",
        flag_type=PathArg("rows"),
        required=True,
    )
    output: str | None = option(
        None, "responses, one JSON object per row (.jsonl)", flag_type=PathArg("output file"), required=True
    )


@dataclass
class StrategyChoice:
    strategy: str = option(
        "pmi",
        "decoding strategy: " + "; ".join(f"{name}: {cls.summary}" for name, cls in STRATEGIES.items()),
        choices=list(STRATEGIES),
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="generate responses with a decoding strategy (PMI-DECODE, CAD, AdaCAD, rerank, faithful, plain)",
        description="Generate a response for each (document, history) row of a rows file (JSONL, CSV, TSV, "
        "Parquet, a dataset) with a decoding "
        "strategy: --strategy pmi (PMI-DECODE, the default), cad, adacad, rerank, faithful (faithkit's "
        "faithful-decoding recipe: rerank with the claim checker over samples, a beam, PMI-DECODE and CAD) or "
        "plain, each with its own parameters (--alpha, --top-p; rerank and faithful: --n, --candidate-search, --judge, "
        "--fluency-tolerance, --fluency-view, --fluency-reference, --also). "
        "Each output record keeps the row's id, document and history, its reference response as "
        "'gold' (a gold/reference column, else the input's response column) and the generated "
        "'response', so the file feeds 'faithkit score' directly. Rerunning the same command "
        "continues where it stopped; bad rows get an 'error' record naming the row and field. Runs "
        "data-parallel under 'accelerate launch -m faithkit generate …'.",
    )
    add_flags(parser, GenerateFlags)
    add_generation_options(parser)
    add_device_option(parser)
    add_dtype_option(parser)
    add_job_options(parser, chunk_size=8)
    add_input_columns(parser)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(
            reads=lambda args: [args.input, args.model, getattr(args, "judge", None)],
            writes=lambda args: [Output("--output", args.output)],
        ),
    )


def add_generation_options(parser: argparse.ArgumentParser) -> None:
    """--strategy, one flag per strategy parameter and per generation option, all from their dataclass fields."""
    from ..decoding.generation_options import GenerationOptions
    from ..decoding.strategies import add_parameter_flags

    group = parser.add_argument_group("decoding")
    add_flags(group, StrategyChoice)
    add_parameter_flags(group)
    add_flags(group, GenerationOptions)


def run(args) -> int:
    from ..decoding.strategies import strategy_from_args

    strategy = strategy_from_args(args.strategy, args)  # checked once, here; it travels whole to its processor
    options = checked_options(args, strategy)
    check_models({"--model": args.model})  # before torch loads: an unknown name is an error within a second
    from ..serving import models
    from .. import provenance
    from ..data import read_rows, unique_ids
    from ..generation.generate import GeneratorJob
    from ..data.jobs import is_main_process, job_fingerprint, run_job

    rows = list(
        read_rows(args.input, columns_from_args(args, required=("document",)), quoting=args.quoting, split=args.split)
    )
    unique_ids(rows)
    decoding = {"strategy": strategy.name, **strategy.parameters(), **options.fingerprint()}
    fingerprint = job_fingerprint("generate", model=models.identity(args.model), decoding=decoding, dtype=args.dtype)
    job = GeneratorJob(args.model, strategy, options, device=args.device, dtype=args.dtype)
    counts = run_job(job, rows, args.output, fingerprint=fingerprint, desc="generate", **job_options(args))
    if is_main_process():
        provenance.write_sidecar(args.output, provenance.record({"generator": args.model}, args.input))
    logger.info(
        "%d generated, %d already done, %d errors -> %s",
        counts["done"],
        counts["skipped"],
        counts["errors"],
        args.output,
    )
    return 0


def checked_options(args, strategy):
    """The generation options of the flags (checked once, as they are made), and the strategy's search and judge
    checked against them, before any model loads."""
    from dataclasses import fields

    from ..decoding.generation_options import GenerationOptions
    from ..decoding.strategies import Cell

    from ..generation.rerank import check_judge

    check_judge(strategy)  # a rerank strategy's judge (faithful's too); nothing for the others
    options = GenerationOptions(**{f.name: getattr(args, f.name) for f in fields(GenerationOptions)})
    options.validate(searches=Cell(strategy, options.search).option_searches)
    strategy.check_search(options.search)
    return options
