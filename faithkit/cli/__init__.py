"""The ``faithkit`` command: parses arguments and calls the modules; no logic lives here."""

from __future__ import annotations

import argparse
import sys

from .. import __version__


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("input columns (found by their usual names when not given)")
    group.add_argument("--document-column", help="column with the grounding document (default: document/knowledge/…)")
    group.add_argument("--history-column", help="column with the history: a string or a JSON list of turns "
                                                 "(default: history/message/…)")
    group.add_argument("--response-column", help="column with the response to score (default: response/…)")
    group.add_argument("--id-column", help="column with a unique row id (default: id, else the line number)")


def add_metric_arguments(parser: argparse.ArgumentParser, default_metric: str = "pmi-faith") -> None:
    """Options shared by every command that builds a metric (score, meta-eval, explain)."""
    from ..metrics import METRIC_NAMES

    parser.add_argument("--metric", default=default_metric, choices=METRIC_NAMES, help="which metric to compute")
    parser.add_argument("--model", help="PMI-FAITH: causal LM, a hub id, a local folder or an offline name "
                                        "(smollm2-135m, gemma3-270m); default bigscience/bloom-560m")
    parser.add_argument("--preset", choices=["offline"], help="Q²/e2e-NLI: use the offline LM backends")
    parser.add_argument("--qg-model", help="Q²: question-generation model")
    parser.add_argument("--qa-model", help="Q²: question-answering model")
    parser.add_argument("--nli-model", help="Q² / e2e-NLI: NLI model")
    parser.add_argument("--batch-size", type=int, help="rows per model call (default 8)")
    parser.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    parser.add_argument("--normalize", choices=["mean", "sum"], help="PMI-FAITH: average (default) or sum "
                                                                     "log-probabilities over response tokens")
    parser.add_argument("--max-length", type=int, help="PMI-FAITH: longest sequence in tokens (default: the model's)")


def metric_from_args(args: argparse.Namespace):
    from ..metrics import load_metric

    names = {
        "pmi-faith": ("model", "batch_size", "device", "normalize", "max_length"),
        "q2": ("preset", "qg_model", "qa_model", "nli_model", "batch_size", "device"),
        "e2e-nli": ("preset", "nli_model", "batch_size", "device"),
        "overlap-f1": (),
        "bleu": (),
    }[args.metric]
    options = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    ignored = [f"--{n.replace('_', '-')}" for n in ("model", "preset", "qg_model", "qa_model", "nli_model", "normalize")
               if getattr(args, n, None) is not None and n not in names]
    if ignored:
        raise SystemExit(f"error: {', '.join(ignored)} do not apply to --metric {args.metric}")
    return load_metric(args.metric, **options)


def columns_from_args(args: argparse.Namespace):
    """The input columns named on the command line; the history may be missing (a warning says so)."""
    from ..data import Columns

    return Columns(document=args.document_column, history=args.history_column, response=args.response_column,
                   id=args.id_column)


# ---- score ---------------------------------------------------------------------------------
def _add_score_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "score", help="score responses for faithfulness to their documents",
        description="Score each row of a JSONL/CSV/TSV file and append results to a JSONL file. "
                    "Rerunning with the same --output continues where it stopped; bad rows get an "
                    "'error' record naming the row and field instead of a score.",
    )
    add_metric_arguments(parser)
    parser.add_argument("--input", required=True, help="rows to score (.jsonl, .csv or .tsv)")
    parser.add_argument("--output", required=True, help="results, one JSON object per row (.jsonl)")
    parser.add_argument("--restart", action="store_true", help="discard an existing --output instead of resuming")
    parser.add_argument("--chunk-size", type=int, default=64, help="rows scored (and written) together (default 64)")
    add_input_arguments(parser)
    parser.set_defaults(func=_run_score)


def _run_score(args) -> None:
    from ..data import ResultWriter, read_results, read_rows, unique_ids
    from ..jobs import score_rows
    from ..report import print_score_table

    rows = list(read_rows(args.input, columns_from_args(args)))
    unique_ids(rows)
    metric = metric_from_args(args)
    with ResultWriter(args.output, resume=not args.restart) as writer:
        counts = score_rows(metric, rows, writer, chunk_size=args.chunk_size, desc=args.metric)
    position = {row.id: i for i, row in enumerate(rows)}
    print_score_table(sorted(read_results(args.output), key=lambda r: position.get(r["id"], len(position))), args.metric)
    print(f"{counts['done']} scored, {counts['skipped']} already done, {counts['errors']} errors -> {args.output}",
          file=sys.stderr)


# ---- meta-eval -------------------------------------------------------------------------------
def _add_meta_eval_parser(subparsers) -> None:
    from ..eval.cli_commands import add_meta_eval_q2_wow_parser, add_meta_eval_system_level_parser

    parser = subparsers.add_parser("meta-eval", help="measure how well a metric agrees with human labels",
                                   description="Meta-evaluate a faithfulness metric against human judgements.")
    benchmarks = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")

    begin = benchmarks.add_parser(
        "begin", help="BEGIN (Dziri et al. 2022): attributable vs not",
        description="Score BEGIN files (positive class: 'Fully attributable'; 'Generic' and 'Not fully "
                    "attributable' are negative), pick each score's best-F1 threshold on dev, and report "
                    "accuracy, precision/recall/F1, AUROC, Spearman and Pearson on dev and test, overall "
                    "and per data source, for the metric and the overlap-F1 and BLEU baselines. Writes "
                    "scores (resumable), results.csv, results.json and roc.png to --out.",
    )
    add_metric_arguments(begin)
    begin.add_argument("--dev", required=True, nargs="+", help="BEGIN dev TSV file(s)")
    begin.add_argument("--test", nargs="+", help="BEGIN test TSV file(s), evaluated at the dev thresholds")
    begin.add_argument("--out", required=True, help="output folder")
    begin.set_defaults(func=_run_meta_eval_begin)
    add_meta_eval_q2_wow_parser(benchmarks)
    add_meta_eval_system_level_parser(benchmarks)


def _run_meta_eval_begin(args) -> None:
    from ..eval.begin import meta_eval_begin

    meta_eval_begin(metric=metric_from_args(args), metric_name=args.metric, dev=args.dev, test=args.test or [],
                    out_dir=args.out)


# ---- entry point ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from ..decoding.generate_cli import add_generate_parser
    from ..eval.cli_commands import add_explain_parser

    parser = argparse.ArgumentParser(
        prog="faithkit",
        description="Faithful document-grounded dialogue: score responses (PMI-FAITH, Q², baselines), "
                    "decode with PMI-DECODE, and meta-evaluate metrics against human labels.",
    )
    parser.add_argument("--version", action="version", version=f"faithkit {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_score_parser(subparsers)
    add_generate_parser(subparsers)
    _add_meta_eval_parser(subparsers)
    add_explain_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..data import InputError
    from ..models import ModelNotAvailableError

    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (InputError, ModelNotAvailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
