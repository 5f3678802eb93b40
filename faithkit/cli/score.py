"""``faithkit score``: score every row of a file with a metric, resumably."""

from __future__ import annotations

import logging
from collections import Counter
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from ..data.jobs import is_main_process
from ..metrics.registry import METRICS, load_metric, metric_names
from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    LazyMetric,
    add_input_columns,
    add_job_options,
    add_metric_option_flags,
    check_metric_models,
    columns_from_args,
    job_options,
    metric_fingerprint_from_args,
    metric_options,
    metric_settings,
    refuse_unused_metric_flags,
)

logger = logging.getLogger(__name__)


@dataclass
class ScoreMetrics:
    """The metrics ``faithkit score`` computes."""

    metric: list[str] = option(
        ["pmi-faith"],
        "which metrics to compute, comma-separated: one output holds every metric's scores (each metric resumes on "
        "its own, in OUTPUT.metrics/); each metric option goes to the metrics that take it\n"
        + "\n".join(f"  {name}: {spec.summary}" for name, spec in METRICS.items()),
        flag_type=lambda text: list(metric_names(text)),  # argparse: "must be one of ..."
        metavar="METRIC[,METRIC...]",
    )


@dataclass
class ScoreFlags:
    input: str | None = option(
        None,
        "rows to score (.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or hf:OWNER/NAME with --split)",
        flag_type=PathArg("rows"),
        required=True,
    )
    output: str | None = option(
        None, "results, one JSON object per row (.jsonl)", flag_type=PathArg("output file"), required=True
    )
    reference_column: str | None = option(
        None,
        "column with each row's reference response, for the relevance scores of the metric lexical (token F1 "
        "and BLEU against it; unset: a gold or reference column, as generate and rerank outputs have)",
        metavar="COLUMN",
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score responses for faithfulness to their documents",
        description="Score each row of a rows file (JSONL, CSV, TSV, Parquet, a dataset) with one metric or "
        "several (--metric pmi-faith,lexical) and write one JSON record per row, in input order. Rerunning the same command continues where it stopped (a different metric, model or "
        "setting stops with what differs); bad rows get an 'error' record naming the row and field, "
        "retried on the next run. Runs data-parallel under 'accelerate launch -m faithkit score …'.",
    )
    add_flags(parser, ScoreMetrics, lists="comma")
    add_metric_option_flags(parser)
    add_flags(parser, ScoreFlags, names=("input", "output"))
    add_job_options(parser)
    add_input_columns(parser)
    add_flags(parser, ScoreFlags, names=("reference_column",))
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(reads=lambda args: [args.input, args.model], writes=lambda args: [Output("--output", args.output)]),
    )


def references_from_args(args, rows) -> dict[str, str] | None:
    """Each row's reference response (row id: text) when one of --metric measures relevance and the rows have one;
    None (with a warning) when the input has none, and a ConfigError for --reference-column with no metric that
    measures relevance, or naming no column of the input."""
    from ..data import gold_of
    from ..data.rows import REFERENCE_COLUMNS
    from ..errors import ConfigError, InputError
    from ..metrics.registry import get_spec

    column = args.reference_column
    relevance = [name for name in args.metric if get_spec(name).needs_references]
    if not relevance:
        if column is not None:
            raise ConfigError("--reference-column applies to --metric lexical (relevance) only; drop it")
        return None
    readable = [row for row in rows if not row.error]
    columns = sorted({name for row in readable for name in row.extras})
    if column is not None and column not in columns:
        raise InputError(f"--reference-column '{column}' is not a column of the input; its other columns are {columns}")
    references = {row.id: text for row in readable if (text := gold_of(row, column)) is not None}
    named = f"column '{column}'" if column else f"a {' or '.join(REFERENCE_COLUMNS)} column"
    if not references:
        logger.warning(
            "no row has a reference response in %s: %s gives knowledge precision only; name the column of "
            "reference responses with --reference-column for token F1 and BLEU",
            named,
            ", ".join(relevance),
        )
        return None
    if len(references) < len(readable):
        logger.warning(
            "%d of %d rows have no reference response in %s: they get no token F1 or BLEU",
            len(readable) - len(references),
            len(readable),
            named,
        )
    return references


def _fingerprint(args, name: str, with_references: bool) -> dict:
    """The job fingerprint of the metric ``name``'s scores: its settings, and the column of references it reads."""
    from ..data.jobs import job_fingerprint

    references = (args.reference_column or "gold/reference") if with_references else None
    return job_fingerprint("score", **metric_fingerprint_from_args(args, name), references=references)


def run(args) -> int:
    from .. import provenance
    from ..data import read_results, read_rows, unique_ids
    from ..metrics.registry import get_spec
    from ..report import print_score_table

    names = args.metric
    refuse_unused_metric_flags(args, names, "--metric")
    judged_by = check_metric_models(args, names)
    rows = list(read_rows(args.input, columns_from_args(args), quoting=args.quoting, split=args.split))
    unique_ids(rows)
    references = references_from_args(args, rows)
    given = {name: references if get_spec(name).needs_references else None for name in names}
    fingerprints = {name: _fingerprint(args, name, given[name] is not None) for name in names}
    metrics = {name: LazyMetric(lambda name=name: load_metric(name, **metric_options(args, name))) for name in names}
    with _lms_loaded_once(args, names):
        counts = _score(args, names, metrics, rows, fingerprints, given)
    if is_main_process():
        made_by = provenance.record(judged_by, args.input, None, metric_settings(args, names))
        provenance.write_sidecar(args.output, made_by)
        print_score_table(read_results(args.output), names)
    for name, count in counts.items():
        logger.info(
            "%s%d scored, %d already done, %d errors -> %s",
            f"{name}: " if len(names) > 1 else "",
            count["done"],
            count["skipped"],
            count["errors"],
            args.output,
        )
    return 0


def _lms_loaded_once(args, names) -> AbstractContextManager:
    """A context in which an LM that several of the metrics ``names`` read (their ``--model``, defaults included:
    ``--metric pmi-faith,faith-judge --model smollm2-135m``) loads once for all of them
    (:func:`faithkit.serving.models.shared_loads`)."""
    from ..metrics.model_roles import models_read

    readers = Counter(models_read(name, metric_options(args, name)).get(f"{name} --model") for name in names)
    shared = {model: count for model, count in readers.items() if model is not None and count > 1}
    if not shared:
        return nullcontext()
    from ..serving.models import shared_loads

    return shared_loads(shared)


def _score(args, names, metrics, rows, fingerprints, given) -> dict[str, dict]:
    """Each metric's counts: one metric's job writes the output itself, several write it through their stores."""
    from ..data.jobs import score_rows
    from ..metrics.scores import score_metrics

    if len(names) == 1:
        [name] = names
        return {
            name: score_rows(
                metrics[name],
                rows,
                args.output,
                fingerprint=fingerprints[name],
                references=given[name],
                desc=name,
                **job_options(args),
            )
        }
    return score_metrics(metrics, rows, args.output, fingerprints, given, **job_options(args))
