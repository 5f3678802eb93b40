"""``faithkit meta-eval begin | q2-wow | system-level | labels``: how well a metric agrees with human labels."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..eval.system_level import Simulation
from ..metrics.registry import METRIC_NAMES, metric_names
from ..settings.options import add_flags, option
from ..data.paths import PathArg
from .declared_files import Files, Output, declare_files
from .shared_flags import (
    LazyMetric,
    add_input_columns,
    add_job_options,
    add_metric_option_flags,
    add_metric_options,
    check_metric_models,
    columns_from_args,
    refuse_unused_metric_flags,
    job_options,
    metric_fingerprint_from_args,
    metric_from_args,
    metric_options,
    metric_settings,
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


@dataclass
class StrictLabels:
    strict_labels: bool = option(
        False,
        "refuse rows whose label is NaN, infinite, empty or null (unset: leave them out, counted in a warning)",
    )


@dataclass
class BeginFlags:
    dev: list[str] | None = option(None, "BEGIN dev TSV file(s)", flag_type=PathArg("rows"), required=True, nargs="+")
    test: list[str] | None = option(
        None, "BEGIN test TSV file(s), evaluated at the dev thresholds", flag_type=PathArg("rows"), nargs="+"
    )
    out: str | None = option(None, "output folder", flag_type=PathArg("output folder"), required=True)


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
    add_flags(parser, BeginFlags)
    add_flags(parser, StrictLabels)
    add_job_options(parser)
    parser.set_defaults(run=_run_begin)
    declare_files(parser, Files(reads=lambda args: [*args.dev, *(args.test or []), args.model], writes=_out_folder))


def _run_begin(args) -> int:
    from .. import provenance
    from ..data.jobs import is_main_process, job_fingerprint

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
        made_by = provenance.record(
            judged_by, [*args.dev, *(args.test or [])], None, metric_settings(args, [args.metric])
        )
        provenance.write_sidecar(Path(args.out) / "results.json", made_by)
    return 0


@dataclass
class Q2WowFlags:
    consistent: str | None = option(
        None, "CSV of consistent responses, e.g. dodeca_consistent.csv", flag_type=PathArg("rows"), required=True
    )
    inconsistent: str | None = option(
        None, "CSV of inconsistent responses, e.g. dodeca_inconsistent.csv", flag_type=PathArg("rows"), required=True
    )
    out: str | None = option(
        None, "output folder (created if missing)", flag_type=PathArg("output folder"), required=True
    )
    limit: int | None = option(None, "score only the first N rows of each file (a quick look)", low=1)
    score_key: str | None = option(None, "output field holding the score (unset: the metric's main score, e.g. q2)")
    threshold: float = option(0.5, "accuracy threshold (0.5 as in the paper)")


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
    add_flags(parser, Q2WowFlags)
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
    from ..data.jobs import is_main_process, job_fingerprint

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
        made_by = provenance.record(
            judged_by, [args.consistent, args.inconsistent], None, metric_settings(args, [args.metric])
        )
        provenance.write_sidecar(Path(args.out) / "summary.json", made_by)
    return 0


@dataclass
class ScorePools:
    scores: str | None = option(
        None,
        "output folder of 'faithkit meta-eval q2-wow' (its scores.jsonl)",
        flag_type=PathArg("input folder"),
        metavar="DIR",
    )
    consistent_scores: str | None = option(
        None, "scores of consistent responses ('faithkit score' output)", flag_type=PathArg("text"), metavar="JSONL"
    )
    inconsistent_scores: str | None = option(
        None, "scores of inconsistent responses", flag_type=PathArg("text"), metavar="JSONL"
    )


@dataclass
class SystemLevelFlags:
    key: list[str] | None = option(
        None,
        "score field to evaluate; repeat for several (unset: every known score field present, e.g. q2, q2_no_nli, "
        "overlap_f1)",
        nargs="append",
    )
    out: str | None = option(
        None, "folder to also write system_level.json and system_level.csv to", flag_type=PathArg("output folder")
    )


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
    add_flags(source, ScorePools)
    add_flags(parser, SystemLevelFlags, names=("key",))
    add_flags(parser, Simulation)
    add_flags(parser, SystemLevelFlags, names=("out",))
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


@dataclass
class LabelsFlags:
    input: str | None = option(
        None,
        "labelled rows (.jsonl, .csv, .tsv, .parquet or hf:OWNER/NAME)",
        flag_type=PathArg("rows"),
        required=True,
    )
    label_column: str | None = option(None, "column holding each row's human label", required=True)
    positive: str | None = option(
        None,
        "the label value of the positive class (faithful, supported, ...); every other value is negative. "
        "Unset: the labels are graded, numbers on a scale (e.g. 1-5), and each score gets Spearman and Kendall "
        "correlations with intervals instead of AUROC and F1",
    )
    metrics: list[str] | None = option(
        None,
        f"comma-separated metrics to rank, of {', '.join(METRIC_NAMES)}",
        flag_type=lambda text: list(metric_names(text)),
        required=True,
    )
    group_by: str | None = option(None, "also report each value of this column on its own", metavar="COLUMN")
    out: str | None = option(
        None,
        "output folder; rerunning with the same folder resumes",
        flag_type=PathArg("output folder"),
        required=True,
    )
    resamples: int = option(1000, "bootstrap resamples of the rows", low=1)
    seed: int = option(0, "bootstrap seed")


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
    add_flags(parser, LabelsFlags, names=("input", "label_column", "positive", "metrics", "group_by"), lists="comma")
    add_flags(parser, StrictLabels)
    add_flags(parser, LabelsFlags, names=("out", "resamples", "seed"))
    options = parser.add_argument_group("metric options (each goes to the metrics that take it)")
    add_metric_option_flags(options)
    add_job_options(parser)
    add_input_columns(parser)
    parser.set_defaults(run=_run_labels)
    declare_files(parser, Files(reads=lambda args: [args.input, args.model], writes=_out_folder))


def _run_labels(args) -> int:
    from .. import provenance
    from ..data import read_rows, unique_ids
    from ..data.jobs import job_fingerprint
    from ..metrics.registry import load_metric

    refuse_unused_metric_flags(args, args.metrics, "--metrics")
    judged_by = check_metric_models(args, args.metrics)
    from ..eval.labelled import label_rows
    from ..eval.leaderboard import meta_eval_labels
    from ..metrics.faith_judge import shares_judge_lm

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

    def made_by() -> dict:
        options = {**provenance.record_options(), "resamples": args.resamples, "seed": args.seed}
        return provenance.record(judged_by, args.input, options, metric_settings(args, args.metrics))

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
    from ..metrics.faith_judge import PMIFaithOffJudge
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
