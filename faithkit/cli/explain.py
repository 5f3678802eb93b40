"""``faithkit explain``: one HTML page showing which parts of each response a metric judged unsupported."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    LazyMetric,
    add_input_columns,
    add_job_options,
    add_metric_options,
    columns_from_args,
    job_options,
    metric_fingerprint_from_args,
    metric_from_args,
)

logger = logging.getLogger(__name__)


@dataclass
class ExplainFlags:
    input: str | None = option(
        None, "scores.jsonl with explanations, or rows (.jsonl/.csv/.tsv)", flag_type=PathArg("rows"), required=True
    )
    html: str | None = option(None, "page to write, e.g. report.html", flag_type=PathArg("output file"), required=True)
    scores_output: str | None = option(
        None,
        "where scores go when --input must be scored first (unset: next to --html, <name>.scores.jsonl)",
        flag_type=PathArg("output file"),
    )
    score_key: str | None = option(None, "field holding the score (unset: the metric's main score, e.g. q2)")
    low_threshold: float = option(0.5, "responses scoring below this are marked low")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="an HTML page showing which parts of each response are unsupported (Q² spans, PMI-FAITH tokens, the "
        "claim checker's sentences)",
        description="Write one self-contained HTML page, lowest scores first. Q² (--metric q2): each response "
        "with its informative spans highlighted from red (the knowledge answers the span's question "
        "differently) to green, the question, both answers, F1 and NLI label on hover and listed "
        "beneath, fallback rows flagged. PMI-FAITH (--metric pmi-faith): every response token "
        "coloured by how much more (green) or less (red) likely the document made it. faithkit's claim checker "
        "(--metric faithkit-checker): each sentence coloured by P(unsupported), with its three probabilities and the "
        "document window it was judged on, the unsupported first. --input is "
        "either a scores JSONL (from 'faithkit score', 'meta-eval q2-wow' or 'sweep'), rendered as "
        "it is, or rows to score first (JSONL/CSV/TSV; scores are saved to --scores-output and "
        "resumed on a rerun).",
    )
    add_metric_options(parser, default_metric="q2")
    add_flags(parser, ExplainFlags)
    add_input_columns(parser)
    add_job_options(parser, chunk_size=16)
    parser.set_defaults(run=run)
    declare_files(
        parser,
        Files(
            reads=lambda args: [args.input, args.model],
            writes=lambda args: [Output("--html", args.html), Output("--scores-output", scores_output(args))],
        ),
    )


def scores_output(args) -> Path:
    """--scores-output, else beside --html."""
    return Path(args.scores_output or Path(args.html).with_suffix(".scores.jsonl"))


def run(args) -> int:
    from ..data import read_results, read_rows, unique_ids
    from ..errors import InputError
    from ..explain import check_explained, is_explained, summarize_records, write_explain_html
    from ..data.jobs import job_fingerprint, score_rows
    from ..metrics.registry import check_scores
    from .meta_eval import score_keys

    source = Path(args.input)
    scores_path = scores_output(args)
    explained = is_explained(source)
    if explained:
        records = read_results(source)
    else:
        rows = list(read_rows(source, columns_from_args(args), quoting=args.quoting, split=args.split))
        unique_ids(rows)
        fingerprint = job_fingerprint("score", **metric_fingerprint_from_args(args))
        score_rows(
            LazyMetric(lambda: metric_from_args(args)),
            rows,
            scores_path,
            fingerprint=fingerprint,
            desc=args.metric,
            flag="--scores-output",
            **job_options(args),
        )
        wanted = {row.id for row in rows}
        records = [r for r in read_results(scores_path) if r["id"] in wanted]
        logger.info("scores -> %s", scores_path)
    score_key = score_keys(args)[0]
    read_from = source if explained else scores_path
    check_scores(records, read_from, [score_key])
    check_explained(records, read_from)
    if not any(score_key in r for r in records):
        raise InputError(
            f"no record in {source} has a '{score_key}' score; is it a scores file of --metric {args.metric}?"
        )
    if any("sentences" in record for record in records):  # faithkit's claim checker: its own page
        from ..explain_checker import write_checker_html

        write_checker_html(records, args.html, score_key=score_key, low_threshold=args.low_threshold)
    else:
        write_explain_html(records, args.html, score_key=score_key, low_threshold=args.low_threshold)
    summary = summarize_records(records, score_key, args.low_threshold)
    print(
        f"{summary['responses']} responses, mean {score_key} {summary['mean']:.3f}, "
        f"{summary['low']} below {args.low_threshold:g}, {summary['errors']} not scored -> {args.html}"
    )
    return 0
