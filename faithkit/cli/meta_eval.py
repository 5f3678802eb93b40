"""``faithkit meta-eval begin | q2-wow | system-level | labels``: how well a metric agrees with human labels."""

from __future__ import annotations

import logging
from pathlib import Path

from ..metrics.registry import METRIC_NAMES
from ..numbers import finite_float
from ..paths import PathArg
from .declared_files import Files, Output, declare_files
from .options import (
    LazyMetric,
    add_input_columns,
    add_job_options,
    add_metric_option_flags,
    add_metric_options,
    check_metric_models,
    columns_from_args,
    given_metric_options,
    job_options,
    metric_fingerprint_from_args,
    metric_from_args,
    metric_name,
    metric_options,
    positive_int,
)

logger = logging.getLogger(__name__)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "meta-eval",
        help="measure how well a metric agrees with human labels",
        description="Meta-evaluate a faithfulness metric against human judgements.",
    )
    benchmarks = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    _register_begin(benchmarks)
    _register_q2_wow(benchmarks)
    _register_system_level(benchmarks)
    _register_labels(benchmarks)


def _out_folder(args) -> list[Output]:
    return [Output("--out", args.out, folder=True)]


def _register_begin(benchmarks) -> None:
    parser = benchmarks.add_parser(
        "begin",
        help="BEGIN (Dziri et al. 2022): attributable vs not",
        description="Score BEGIN files (positive class: 'Fully attributable'; 'Generic' and 'Not fully "
        "attributable' are negative), pick each score's best-F1 threshold on dev, and report "
        "accuracy, precision/recall/F1, AUROC, Spearman and Pearson on dev and test, overall "
        "and per data source, for the metric and the overlap-F1 and BLEU baselines. Writes "
        "scores_dev.jsonl / scores_test.jsonl (resumable), results.csv, results.json and "
        "roc_dev.png / roc_test.png to --out.",
    )
    add_metric_options(parser)
    parser.add_argument("--dev", required=True, nargs="+", type=PathArg("rows"), help="BEGIN dev TSV file(s)")
    parser.add_argument(
        "--test", nargs="+", type=PathArg("rows"), help="BEGIN test TSV file(s), evaluated at the dev thresholds"
    )
    parser.add_argument("--out", required=True, type=PathArg("output folder"), help="output folder")
    add_strict_labels_option(parser)
    add_job_options(parser)
    parser.set_defaults(run=_run_begin)
    declare_files(parser, Files(reads=lambda args: [*args.dev, *(args.test or []), args.model], writes=_out_folder))


def _run_begin(args) -> int:
    from .. import provenance
    from ..jobs import is_main_process, job_fingerprint

    judged_by = check_metric_models(args, [args.metric])
    from ..eval.begin import meta_eval_begin  # numpy, scipy: after the check

    fingerprint = job_fingerprint("meta-eval begin", **metric_fingerprint_from_args(args))
    meta_eval_begin(
        metric=LazyMetric(lambda: metric_from_args(args)),
        metric_name=args.metric,
        dev=args.dev,
        test=args.test or [],
        out_dir=args.out,
        fingerprint=fingerprint,
        strict_labels=args.strict_labels,
        **job_options(args),
    )
    if is_main_process():  # results.json is a list: what made it goes beside it
        made_by = provenance.record(judged_by, [*args.dev, *(args.test or [])])
        provenance.write_sidecar(Path(args.out) / "results.json", made_by)
    return 0


def add_strict_labels_option(parser) -> None:
    parser.add_argument(
        "--strict-labels",
        action="store_true",
        help="refuse rows whose label is NaN, infinite, empty or null (default: leave them out, counted in a warning)",
    )


def _register_q2_wow(benchmarks) -> None:
    parser = benchmarks.add_parser(
        "q2-wow",
        help="Q² paper's WoW sets (Honovich et al. 2021): consistent vs inconsistent responses",
        description="Score the Q² paper's Wizard-of-Wikipedia CSVs (columns knowledge, message, response; "
        "one file of consistent and one of inconsistent responses) and report, as in the paper's "
        "Tables 2 and 3, the mean score on each set, accuracy at threshold 0.5 (score >= 0.5 counts "
        "as consistent) and AUROC, for the metric (and q2_no_nli for Q²) and the token-F1 overlap "
        "baseline. Prints a markdown table and writes scores.jsonl (resumable: rerun with the same "
        "--out to continue), summary.csv, summary.json, roc.png and histograms.png to --out.",
    )
    add_metric_options(parser, default_metric="q2")
    parser.add_argument(
        "--consistent",
        required=True,
        type=PathArg("rows"),
        help="CSV of consistent responses, e.g. dodeca_consistent.csv",
    )
    parser.add_argument(
        "--inconsistent",
        required=True,
        type=PathArg("rows"),
        help="CSV of inconsistent responses, e.g. dodeca_inconsistent.csv",
    )
    parser.add_argument(
        "--out", required=True, type=PathArg("output folder"), help="output folder (created if missing)"
    )
    parser.add_argument("--limit", type=positive_int, help="score only the first N rows of each file (a quick look)")
    parser.add_argument(
        "--score-key", help="output field holding the score (default: the metric's main score, e.g. q2)"
    )
    parser.add_argument(
        "--threshold", type=finite_float, default=0.5, help="accuracy threshold (default 0.5, as in the paper)"
    )
    add_job_options(parser, chunk_size=16)
    parser.set_defaults(run=_run_q2_wow)
    declare_files(
        parser, Files(reads=lambda args: [args.consistent, args.inconsistent, args.model], writes=_out_folder)
    )


def score_keys(args) -> tuple[str, ...]:
    """``--score-key``, else the metric's score keys from the registry."""
    from ..metrics.registry import get_spec

    return (args.score_key,) if args.score_key else get_spec(args.metric).score_keys


def _run_q2_wow(args) -> int:
    from .. import provenance
    from ..jobs import is_main_process, job_fingerprint

    judged_by = check_metric_models(args, [args.metric])
    from ..eval.q2_wow import meta_eval_q2_wow  # numpy, scipy: after the check

    fingerprint = job_fingerprint("meta-eval q2-wow", **metric_fingerprint_from_args(args))
    meta_eval_q2_wow(
        args.consistent,
        args.inconsistent,
        LazyMetric(lambda: metric_from_args(args)),
        args.out,
        limit=args.limit,
        score_keys=score_keys(args),
        threshold=args.threshold,
        fingerprint=fingerprint,
        **job_options(args),
    )
    if is_main_process():
        made_by = provenance.record(judged_by, [args.consistent, args.inconsistent])
        provenance.write_sidecar(Path(args.out) / "summary.json", made_by)
    return 0


def _register_system_level(benchmarks) -> None:
    parser = benchmarks.add_parser(
        "system-level",
        help="Q² paper's bootstrap system-level correlation (Table 4)",
        description="Simulate systems whose responses are inconsistent in a given share of contexts "
        "(--proportions, default 0.05 to 0.25), each answering --samples contexts drawn from "
        "already scored consistent and inconsistent responses; a system's score is the mean "
        "metric score of its responses. Report the Spearman correlation between system scores "
        "and true consistency (1 - proportion), averaged over --repetitions draws, with its "
        "standard deviation and 2.5-97.5 percentile interval. Reads scores, never computes them: "
        "run 'faithkit meta-eval q2-wow' (then pass --scores DIR) or 'faithkit score' on each set "
        "first.",
    )
    source = parser.add_argument_group(
        "scores (either --scores, or both --consistent-scores and --inconsistent-scores)"
    )
    source.add_argument(
        "--scores",
        metavar="DIR",
        type=PathArg("input folder"),
        help="output folder of 'faithkit meta-eval q2-wow' (its scores.jsonl)",
    )
    source.add_argument(
        "--consistent-scores",
        metavar="JSONL",
        type=PathArg("text"),
        help="scores of consistent responses ('faithkit score' output)",
    )
    source.add_argument(
        "--inconsistent-scores", metavar="JSONL", type=PathArg("text"), help="scores of inconsistent responses"
    )
    parser.add_argument(
        "--key",
        action="append",
        help="score field to evaluate; repeat for several (default: "
        "every known score field present, e.g. q2, q2_no_nli, "
        "overlap_f1)",
    )
    parser.add_argument(
        "--samples", type=positive_int, default=350, help="responses per simulated system (default 350)"
    )
    parser.add_argument("--repetitions", type=positive_int, default=1000, help="bootstrap repetitions (default 1000)")
    parser.add_argument(
        "--proportions",
        type=finite_float,
        nargs="+",
        default=[0.05, 0.10, 0.15, 0.20, 0.25],
        help="inconsistency proportions, one simulated system each (default 0.05 0.10 0.15 0.20 0.25)",
    )
    parser.add_argument(
        "--paired", action="store_true", help="the two score files are aligned: line i of each answers the same context"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed; the same seed gives the same numbers (default 0)"
    )
    parser.add_argument(
        "--out", type=PathArg("output folder"), help="folder to also write system_level.json and system_level.csv to"
    )
    parser.set_defaults(run=_run_system_level)
    declare_files(
        parser,
        Files(
            reads=lambda args: [
                args.consistent_scores,
                args.inconsistent_scores,
                args.scores and Path(args.scores) / "scores.jsonl",
            ],
            # it writes two files only, so --out may be the --scores folder
            writes=lambda args: [
                Output("--out", args.out and Path(args.out) / name)
                for name in ("system_level.json", "system_level.csv")
            ],
        ),
    )


def _run_system_level(args) -> int:
    from ..errors import ConfigError
    from ..eval.system_level import SYSTEM_LEVEL_COLUMNS, load_score_pools, system_level_table, write_system_level
    from ..report import markdown_table

    consistent, inconsistent = load_score_pools(args.scores, args.consistent_scores, args.inconsistent_scores)
    try:
        results = system_level_table(
            consistent,
            inconsistent,
            args.key,
            proportions=args.proportions,
            samples=args.samples,
            repetitions=args.repetitions,
            seed=args.seed,
            paired=args.paired,
        )
    except ValueError as error:  # settings the simulation cannot use (e.g. a proportion outside [0, 1])
        raise ConfigError(str(error)) from None
    print(
        markdown_table(
            ["score", "Spearman (mean)", "std", "2.5%", "97.5%", "undefined"],
            [[r["score"], *(r[c] for c in SYSTEM_LEVEL_COLUMNS)] for r in results],
        )
    )
    logger.info(
        "\n%d repetitions of %d systems x %d responses, seed %d",
        args.repetitions,
        len(args.proportions),
        args.samples,
        args.seed,
    )
    if args.out:
        write_system_level(args.out, results)
    return 0


def _register_labels(benchmarks) -> None:
    parser = benchmarks.add_parser(
        "labels",
        help="a leaderboard of metrics on any file of labelled responses",
        description="Score every row of a labelled file with each of --metrics and report, per score (and per "
        "--group-by value): AUROC with a bootstrap interval, the label's base rate, the best-F1 threshold "
        "(chosen on these rows), F1 and balanced accuracy at it beside the F1 of always answering positive, and "
        "paired-bootstrap tests of the AUROC difference between every two scores on the same rows, with "
        "Holm's correction over each group's pairs. Graded labels (no --positive): Spearman and Kendall with "
        "bootstrap intervals, and paired tests of the Spearman difference. Prints the tables and writes "
        "scores/<metric>.jsonl (resumable), results.csv, paired.csv, results.json and roc.png to --out.",
    )
    parser.add_argument(
        "--input",
        required=True,
        type=PathArg("rows"),
        help="labelled rows (.jsonl, .csv, .tsv, .parquet or hf:OWNER/NAME)",
    )
    parser.add_argument("--label-column", required=True, help="column holding each row's human label")
    parser.add_argument(
        "--positive",
        help="the label value of the positive class (faithful, supported, ...); every other value is negative. "
        "Unset: the labels are graded, numbers on a scale (e.g. 1-5), and each score gets Spearman and Kendall "
        "correlations with intervals instead of AUROC and F1",
    )
    parser.add_argument(
        "--metrics",
        required=True,
        type=_metric_names,
        help=f"comma-separated metrics to rank, of {', '.join(METRIC_NAMES)}",
    )
    parser.add_argument("--group-by", metavar="COLUMN", help="also report each value of this column on its own")
    add_strict_labels_option(parser)
    parser.add_argument(
        "--out",
        required=True,
        type=PathArg("output folder"),
        help="output folder; rerunning with the same folder resumes",
    )
    parser.add_argument(
        "--resamples", type=positive_int, default=1000, help="bootstrap resamples of the rows (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    options = parser.add_argument_group("metric options (each goes to the metrics that take it)")
    add_metric_option_flags(options)
    add_job_options(parser)
    add_input_columns(parser)
    parser.set_defaults(run=_run_labels)
    declare_files(parser, Files(reads=lambda args: [args.input, args.model], writes=_out_folder))


def _metric_names(text: str) -> list[str]:
    import argparse

    names = list(dict.fromkeys(metric_name(name.strip()) for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in METRIC_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {', '.join(unknown) or '(none given)'}; choose from {', '.join(METRIC_NAMES)}"
        )
    return names


def _run_labels(args) -> int:
    from .. import provenance
    from ..data import read_rows, unique_ids
    from ..errors import ConfigError
    from ..jobs import job_fingerprint
    from ..metrics.registry import get_spec, load_metric

    unused = [
        f"--{key.replace('_', '-')}"
        for key in given_metric_options(args)
        if not any(key in get_spec(name).options for name in args.metrics)
    ]
    if unused:
        raise ConfigError(f"{', '.join(unused)} apply to none of --metrics {','.join(args.metrics)}; drop them")
    judged_by = check_metric_models(args, args.metrics)
    from ..eval.leaderboard import label_rows, meta_eval_labels  # numpy, scipy: after the check
    from ..metrics.judge import shares_judge_lm

    rows = list(read_rows(args.input, columns_from_args(args), quoting=args.quoting, split=args.split))
    unique_ids(rows)
    labelled = label_rows(rows, args.label_column, args.positive, args.group_by, strict=args.strict_labels)
    metrics = {
        name: LazyMetric(lambda name=name: load_metric(name, **metric_options(args, name))) for name in args.metrics
    }
    fingerprints = {
        name: job_fingerprint("meta-eval labels", **metric_fingerprint_from_args(args, name)) for name in args.metrics
    }
    if {"faith-judge", "pmi-faith"} <= set(args.metrics) and shares_judge_lm(
        metric_options(args, "faith-judge"), metric_options(args, "pmi-faith")
    ):
        metrics, fingerprints = _one_judge_pass(args, metrics, fingerprints)
    made_by = provenance.record(
        judged_by,
        args.input,
        {**provenance.record_options(), "resamples": args.resamples, "seed": args.seed},
    )
    meta_eval_labels(
        metrics,
        labelled,
        args.out,
        fingerprints,
        resamples=args.resamples,
        seed=args.seed,
        made_by=made_by,
        **job_options(args),
    )
    return 0


def _one_judge_pass(args, metrics: dict, fingerprints: dict) -> tuple[dict, dict]:
    """faith-judge and pmi-faith under the same judge LM: faith-judge scores first, with PMI-FAITH's unconditional
    views too (its fingerprint says so), and pmi-faith's rows are read off its records, so the LM runs once."""
    from ..data import read_results
    from ..eval.leaderboard import scores_path
    from ..metrics.judge import PMIFaithOffJudge
    from ..metrics.registry import get_spec, option_defaults

    unconditional = option_defaults("pmi-faith")["unconditional"]
    judged = scores_path(args.out, "faith-judge")
    shared = {
        "faith-judge": LazyMetric(
            lambda: get_spec("faith-judge").build(**metric_options(args, "faith-judge"), unconditional=unconditional)
        ),
        "pmi-faith": LazyMetric(lambda: PMIFaithOffJudge(read_results(judged), unconditional=unconditional)),
    }
    ordered = {name: shared[name] for name in ("faith-judge", "pmi-faith")}
    ordered.update((name, metric) for name, metric in metrics.items() if name not in shared)
    prints = dict(fingerprints, **{"faith-judge": {**fingerprints["faith-judge"], "with": "pmi-faith's views"}})
    return ordered, prints
