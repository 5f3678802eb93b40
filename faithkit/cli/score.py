"""``faithkit score``: score every row of a file with a metric, resumably."""

from __future__ import annotations

import logging

from ..jobs import is_main_process
from ..paths import PathArg
from .declared_files import Files, Output, declare_files
from .options import (
    LazyMetric,
    add_input_columns,
    add_job_options,
    add_metric_options,
    check_metric_models,
    columns_from_args,
    job_options,
    metric_fingerprint_from_args,
    metric_from_args,
)

logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score responses for faithfulness to their documents",
        description="Score each row of a rows file (JSONL, CSV, TSV, Parquet, a dataset) and write one JSON "
        "record per row, in input order. Rerunning the same command continues where it stopped (a different metric, model or "
        "setting stops with what differs); bad rows get an 'error' record naming the row and field, "
        "retried on the next run. Runs data-parallel under 'accelerate launch -m faithkit score …'.",
    )
    add_metric_options(parser)
    parser.add_argument(
        "--input",
        required=True,
        type=PathArg("rows"),
        help="rows to score (.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or hf:OWNER/NAME with --split)",
    )
    parser.add_argument(
        "--output", required=True, type=PathArg("output file"), help="results, one JSON object per row (.jsonl)"
    )
    add_job_options(parser)
    add_input_columns(parser)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(reads=lambda args: [args.input, args.model], writes=lambda args: [Output("--output", args.output)]),
    )


def run(args) -> int:
    from .. import provenance
    from ..data import read_results, read_rows, unique_ids
    from ..jobs import job_fingerprint, score_rows
    from ..report import print_score_table

    judged_by = check_metric_models(args, [args.metric])
    rows = list(read_rows(args.input, columns_from_args(args), quoting=args.quoting, split=args.split))
    unique_ids(rows)
    fingerprint = job_fingerprint("score", **metric_fingerprint_from_args(args))
    metric = LazyMetric(lambda: metric_from_args(args))
    counts = score_rows(metric, rows, args.output, fingerprint=fingerprint, desc=args.metric, **job_options(args))
    if is_main_process():
        provenance.write_sidecar(args.output, provenance.record(judged_by, args.input))
        print_score_table(read_results(args.output), args.metric)
    logger.info(
        "%d scored, %d already done, %d errors -> %s", counts["done"], counts["skipped"], counts["errors"], args.output
    )
    return 0
