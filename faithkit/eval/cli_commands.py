"""Command-line glue for the Q² evaluation commands; ``faithkit.cli`` registers these parsers.

- ``add_meta_eval_q2_wow_parser(benchmarks)`` and ``add_meta_eval_system_level_parser(benchmarks)``
  take the sub-parsers of the ``meta-eval`` command (``faithkit meta-eval q2-wow`` / ``system-level``).
- ``add_explain_parser(subparsers)`` takes the top-level sub-parsers (``faithkit explain``).

Each sets ``func`` to its runner, which only reads arguments and calls the modules.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SYSTEM_LEVEL_COLUMNS = ("mean", "std", "ci_low", "ci_high", "undefined")


# ---- meta-eval q2-wow ----------------------------------------------------------------------
def add_meta_eval_q2_wow_parser(benchmarks) -> argparse.ArgumentParser:
    from ..cli import add_metric_arguments

    parser = benchmarks.add_parser(
        "q2-wow", help="Q² paper's WoW sets (Honovich et al. 2021): consistent vs inconsistent responses",
        description="Score the Q² paper's Wizard-of-Wikipedia CSVs (columns knowledge, message, response; "
                    "one file of consistent and one of inconsistent responses) and report, as in the paper's "
                    "Tables 2 and 3, the mean score on each set, accuracy at threshold 0.5 (score >= 0.5 counts "
                    "as consistent) and AUROC, for the metric (and q2_no_nli for Q²) and the token-F1 overlap "
                    "baseline. Prints a markdown table and writes scores.jsonl (resumable: rerun with the same "
                    "--out to continue), summary.csv, summary.json, roc.png and histograms.png to --out.",
    )
    add_metric_arguments(parser, default_metric="q2")
    parser.add_argument("--consistent", required=True, help="CSV of consistent responses, e.g. dodeca_consistent.csv")
    parser.add_argument("--inconsistent", required=True,
                        help="CSV of inconsistent responses, e.g. dodeca_inconsistent.csv")
    parser.add_argument("--out", required=True, help="output folder (created if missing)")
    parser.add_argument("--limit", type=int, help="score only the first N rows of each file (a quick look)")
    parser.add_argument("--score-key", help="output field holding the score (default: the metric's main score, "
                                            "e.g. q2)")
    parser.add_argument("--threshold", type=float, default=0.5, help="accuracy threshold (default 0.5, as in the paper)")
    parser.add_argument("--chunk-size", type=int, default=16, help="rows scored (and written) together (default 16)")
    parser.set_defaults(func=run_meta_eval_q2_wow)
    return parser


def _score_keys(args) -> tuple[str, ...]:
    from ..report import SCORE_KEYS

    return (args.score_key,) if args.score_key else SCORE_KEYS[args.metric]


def run_meta_eval_q2_wow(args) -> None:
    from ..cli import metric_from_args
    from .q2_wow import meta_eval_q2_wow

    meta_eval_q2_wow(args.consistent, args.inconsistent, metric_from_args(args), args.out, limit=args.limit,
                     score_keys=_score_keys(args), threshold=args.threshold, chunk_size=args.chunk_size)


# ---- meta-eval system-level ----------------------------------------------------------------
def add_meta_eval_system_level_parser(benchmarks) -> argparse.ArgumentParser:
    parser = benchmarks.add_parser(
        "system-level", help="Q² paper's bootstrap system-level correlation (Table 4)",
        description="Simulate systems whose responses are inconsistent in a given share of contexts "
                    "(--proportions, default 0.05 to 0.25), each answering --samples contexts drawn from "
                    "already scored consistent and inconsistent responses; a system's score is the mean "
                    "metric score of its responses. Report the Spearman correlation between system scores "
                    "and true consistency (1 - proportion), averaged over --repetitions draws, with its "
                    "standard deviation and 2.5-97.5 percentile interval. Reads scores, never computes them: "
                    "run 'faithkit meta-eval q2-wow' (then pass --scores DIR) or 'faithkit score' on each set "
                    "first.",
    )
    source = parser.add_argument_group("scores (either --scores, or both --consistent-scores and "
                                       "--inconsistent-scores)")
    source.add_argument("--scores", metavar="DIR", help="output folder of 'faithkit meta-eval q2-wow' "
                                                        "(its scores.jsonl)")
    source.add_argument("--consistent-scores", metavar="JSONL", help="scores of consistent responses "
                                                                      "('faithkit score' output)")
    source.add_argument("--inconsistent-scores", metavar="JSONL", help="scores of inconsistent responses")
    parser.add_argument("--key", action="append", help="score field to evaluate; repeat for several (default: "
                                                       "every known score field present, e.g. q2, q2_no_nli, "
                                                       "overlap_f1)")
    parser.add_argument("--samples", type=int, default=350, help="responses per simulated system (default 350)")
    parser.add_argument("--repetitions", type=int, default=1000, help="bootstrap repetitions (default 1000)")
    parser.add_argument("--proportions", type=float, nargs="+", default=[0.05, 0.10, 0.15, 0.20, 0.25],
                        help="inconsistency proportions, one simulated system each (default 0.05 0.10 0.15 0.20 "
                             "0.25)")
    parser.add_argument("--paired", action="store_true",
                        help="the two score files are aligned: line i of each answers the same context")
    parser.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same numbers "
                                                            "(default 0)")
    parser.add_argument("--out", help="folder to also write system_level.json and system_level.csv to")
    parser.set_defaults(func=run_meta_eval_system_level)
    return parser


def _load_pools(args) -> tuple[list[dict], list[dict]]:
    from ..data import InputError, read_results
    from .q2_wow import set_of

    if args.scores and (args.consistent_scores or args.inconsistent_scores):
        raise InputError("give either --scores DIR or --consistent-scores/--inconsistent-scores, not both")
    if args.scores:
        path = Path(args.scores) / "scores.jsonl"
        if not path.exists():
            raise InputError(f"{path} not found; --scores takes the --out folder of 'faithkit meta-eval q2-wow'")
        records = read_results(path)
        return ([r for r in records if set_of(r["id"]) == "consistent"],
                [r for r in records if set_of(r["id"]) == "inconsistent"])
    if not (args.consistent_scores and args.inconsistent_scores):
        raise InputError("no scores given: pass --scores DIR, or both --consistent-scores and --inconsistent-scores")
    for path in (args.consistent_scores, args.inconsistent_scores):
        if not Path(path).exists():
            raise InputError(f"score file not found: {path}")
    return read_results(args.consistent_scores), read_results(args.inconsistent_scores)


def _default_keys(records: list[dict]) -> list[str]:
    """Known score fields that every scored record carries, in the report's order."""
    from ..report import SCORE_KEYS

    known = [key for keys in SCORE_KEYS.values() for key in keys]
    scored = [r for r in records if "error" not in r]
    return [key for key in dict.fromkeys(known) if scored and all(r.get(key) is not None for r in scored)]


def run_meta_eval_system_level(args) -> None:
    from ..data import InputError
    from ..report import markdown_table
    from .system_level import system_level_correlation

    consistent, inconsistent = _load_pools(args)
    keys = args.key or _default_keys(consistent + inconsistent)
    if not keys:
        raise InputError("no score field found in the records; name one with --key")
    results = []
    for key in keys:
        pools = []
        for name, records in (("consistent", consistent), ("inconsistent", inconsistent)):
            values = [float(r[key]) for r in records if "error" not in r and r.get(key) is not None]
            if not values:
                raise InputError(f"no {name} record has a '{key}' score; check --key")
            pools.append(values)
        result = system_level_correlation(*pools, proportions=args.proportions, samples=args.samples,
                                          repetitions=args.repetitions, seed=args.seed, paired=args.paired)
        results.append({"score": key, "consistent": len(pools[0]), "inconsistent": len(pools[1]), **result})
    print(markdown_table(["score", "Spearman (mean)", "std", "2.5%", "97.5%", "undefined"],
                         [[r["score"], *(r[c] for c in SYSTEM_LEVEL_COLUMNS)] for r in results]))
    print(f"\n{args.repetitions} repetitions of {len(args.proportions)} systems x {args.samples} responses, "
          f"seed {args.seed}", file=sys.stderr)
    if args.out:
        _write_system_level(Path(args.out), results)


def _write_system_level(out: Path, results: list[dict]) -> None:
    import csv

    out.mkdir(parents=True, exist_ok=True)
    (out / "system_level.json").write_text(json.dumps(results, indent=2))
    with open(out / "system_level.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["score", *SYSTEM_LEVEL_COLUMNS, "consistent", "inconsistent",
                                                    "samples", "repetitions", "seed", "paired"],
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results)


# ---- explain -------------------------------------------------------------------------------
def add_explain_parser(subparsers) -> argparse.ArgumentParser:
    from ..cli import add_input_arguments, add_metric_arguments

    parser = subparsers.add_parser(
        "explain", help="an HTML page showing which parts of each response Q² judged inconsistent",
        description="Write one self-contained HTML page: each response with its informative spans "
                    "highlighted from red (the knowledge answers the span's question differently) to green, "
                    "the question, both answers, F1 and NLI label on hover and listed beneath, the "
                    "knowledge shown, fallback rows flagged, lowest scores first. --input is either a scores "
                    "JSONL with explanations (from 'faithkit score --metric q2' or 'meta-eval q2-wow'), "
                    "rendered as it is, or rows to score first (JSONL/CSV/TSV; scores are saved to "
                    "--scores-output and resumed on a rerun).",
    )
    add_metric_arguments(parser, default_metric="q2")
    parser.add_argument("--input", required=True, help="scores.jsonl with explanations, or rows (.jsonl/.csv/.tsv)")
    parser.add_argument("--html", required=True, help="page to write, e.g. report.html")
    parser.add_argument("--scores-output", help="where scores go when --input must be scored first "
                                                "(default: next to --html, <name>.scores.jsonl)")
    parser.add_argument("--score-key", help="field holding the score (default: the metric's main score, e.g. q2)")
    parser.add_argument("--low-threshold", type=float, default=0.5,
                        help="responses scoring below this are marked low (default 0.5)")
    parser.add_argument("--chunk-size", type=int, default=16, help="rows scored (and written) together (default 16)")
    add_input_arguments(parser)
    parser.set_defaults(func=run_explain)
    return parser


def _is_scored(path: Path) -> bool:
    """A JSONL whose first scored record already carries explanations needs no scoring."""
    if path.suffix.lower() != ".jsonl":
        return False
    from ..data import read_results

    scored = [r for r in read_results(path) if "error" not in r]
    return bool(scored) and "explanations" in scored[0]


def run_explain(args) -> None:
    from ..cli import columns_from_args, metric_from_args
    from ..data import InputError, ResultWriter, read_results, read_rows, unique_ids
    from ..jobs import score_rows
    from .explain import summarize_records, write_explain_html

    source = Path(args.input)
    if not source.exists():
        raise InputError(f"input file not found: {source}")
    if _is_scored(source):
        records = read_results(source)
    else:
        rows = list(read_rows(source, columns_from_args(args)))
        unique_ids(rows)
        scores_path = Path(args.scores_output or Path(args.html).with_suffix(".scores.jsonl"))
        with ResultWriter(scores_path) as writer:
            score_rows(metric_from_args(args), rows, writer, chunk_size=args.chunk_size, desc=args.metric)
        wanted = {row.id for row in rows}
        records = [r for r in read_results(scores_path) if r["id"] in wanted]
        print(f"scores -> {scores_path}", file=sys.stderr)
    score_key = _score_keys(args)[0]
    if not any(score_key in r for r in records):
        raise InputError(f"no record in {source} has a '{score_key}' score; is it a scores file of --metric "
                         f"{args.metric}?")
    write_explain_html(records, args.html, score_key=score_key, low_threshold=args.low_threshold)
    summary = summarize_records(records, score_key, args.low_threshold)
    print(f"{summary['responses']} responses, mean {score_key} {summary['mean']:.3f}, "
          f"{summary['low']} below {args.low_threshold:g}, {summary['errors']} not scored -> {args.html}")
