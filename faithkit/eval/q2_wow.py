"""Meta-evaluation on the Q² paper's Wizard-of-Wikipedia sets (Honovich et al. 2021, Tables 2 and 3).

Two CSV files of system responses annotated by the authors: one whose responses are all
consistent with their knowledge, one whose responses are all inconsistent. A good metric
gives the first set a higher mean score, separates the sets at a threshold of 0.5, and
ranks consistent above inconsistent responses (AUROC). The token-F1 overlap baseline of
the paper is reported beside it.

Scores go row by row to ``scores.jsonl`` in the output folder (ids
``consistent:<n>`` / ``inconsistent:<n>``, n counting data lines from 1), so an
interrupted run resumes; the file is also what ``faithkit explain`` and ``faithkit
meta-eval system-level --scores`` read.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

from ..data import read_results, unique_ids
from ..data.corpora.q2_wow import SETS, load_q2_wow, set_of
from ..errors import InputError
from ..data.files import replacing, write_json
from ..data.jobs import current_process, score_rows
from ..metrics.lexical import token_f1_overlap
from ..report import markdown_table
from .. import stats
from . import plots

BASELINE_KEY = "overlap_f1"
TABLE = (
    ("mean_consistent", "mean (consistent)"),
    ("mean_inconsistent", "mean (inconsistent)"),
    ("accuracy", "accuracy@{threshold}"),
    ("auroc", "AUROC"),
)


class _WithOverlap:
    """The metric plus the overlap baseline in each output row, so both are stored and resumed together."""

    def __init__(self, metric):
        self.metric = metric

    def compute_rows(self, documents, histories, responses) -> list[dict]:
        rows = self.metric.compute_rows(documents, histories, responses)
        return [
            {**row, BASELINE_KEY: token_f1_overlap(document, response)}
            for row, document, response in zip(rows, documents, responses)
        ]


def meta_eval_q2_wow(
    consistent_csv: str | Path,
    inconsistent_csv: str | Path,
    metric,
    out_dir: str | Path,
    limit: int | None = None,
    score_keys: Sequence[str] = ("q2", "q2_no_nli"),
    threshold: float = 0.5,
    **job,
) -> dict:
    """Score both sets, print the Table 2/3-shaped markdown table, write CSV/JSON/PNG; return the summary.

    ``metric`` is anything with ``compute_rows(documents, histories, responses)`` returning
    one dict per row; ``score_keys[0]`` must be in those dicts, the other keys are reported
    when present (for Q²: ``q2`` and ``q2_no_nli``). ``limit`` takes the first rows of each
    file, for a quick look. Scores are resumable: ``job`` holds :func:`faithkit.data.jobs.run_job`'s options, among
    them the ``fingerprint`` that guards them (:func:`faithkit.data.jobs.job_fingerprint`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = load_q2_wow(consistent_csv, "consistent", limit) + load_q2_wow(inconsistent_csv, "inconsistent", limit)
    unique_ids(rows)
    counts = score_rows(_WithOverlap(metric), rows, out / "scores.jsonl", desc="q2-wow", flag="--out", **job)

    wanted = {row.id for row in rows}
    records = [r for r in read_results(out / "scores.jsonl") if r["id"] in wanted]
    scored = [r for r in records if "error" not in r and r.get(score_keys[0]) is not None]
    if not scored:
        raise InputError(_no_score_message(records, score_keys[0]))
    names = [key for key in score_keys if all(r.get(key) is not None for r in scored)]
    if BASELINE_KEY not in names:
        names.append(BASELINE_KEY)
    labels = [SETS[set_of(r["id"])] for r in scored]

    summary = {
        "threshold": threshold,
        "rows": {name: sum(1 for r in records if set_of(r["id"]) == name) for name in SETS},
        "unscored": len(records) - len(scored),
        "newly_scored": counts["done"],
        "coverage": _coverage(scored),
        "results": [_score_result(name, [float(r[name]) for r in scored], labels, threshold) for name in names],
    }
    if current_process().is_main:  # under accelerate launch the other processes only score
        _write_outputs(out, summary, scored, labels, names)
        _print_table(summary)
    return summary


def _score_result(name: str, values: list[float], labels: list[int], threshold: float) -> dict:
    """One score's row of the table: its means on both sets and :func:`faithkit.stats.summarize`'s figures."""
    summary = stats.summarize(values, labels, threshold)
    return {
        "score": name,
        "mean_consistent": summary["mean_positive"],
        "mean_inconsistent": summary["mean_negative"],
        **summary,
    }


def _no_score_message(records: list[dict], key: str) -> str:
    fields = sorted({k for r in records if "error" not in r for k in r})
    if fields:
        return (
            f"the metric's output has no '{key}' field; its fields are {fields}. "
            f"Name the score to evaluate in score_keys (CLI: --score-key)."
        )
    return "no row could be scored; see the 'error' records in scores.jsonl"


def _coverage(records: list[dict]) -> dict | None:
    """Share of responses per set scored by questions rather than by the fallback (Q² only)."""
    if not any("fallback" in r for r in records):
        return None
    coverage = {}
    for name in SETS:
        in_set = [r for r in records if set_of(r["id"]) == name]
        covered = sum(1 for r in in_set if not r.get("fallback"))
        coverage[name] = {
            "covered": covered,
            "total": len(in_set),
            "share": covered / len(in_set) if in_set else math.nan,
        }
    return coverage


def _write_outputs(out: Path, summary: dict, scored: list[dict], labels: list[int], names: list[str]) -> None:
    columns = [
        "score",
        "mean_consistent",
        "mean_inconsistent",
        "accuracy",
        "auroc",
        "threshold",
        "precision",
        "recall",
        "f1",
        "spearman",
        "pearson",
        "n",
        "n_positive",
    ]
    with replacing(out / "summary.csv", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(summary["results"])
    write_json(out / "summary.json", summary)
    named = {name: [float(r[name]) for r in scored] for name in names}
    if len(set(labels)) == 2:
        plots.roc_curves(named, labels, out / "roc.png", title="Q² WoW: consistent vs inconsistent")
    plots.score_histograms(named, labels, out / "histograms.png", class_names=("inconsistent", "consistent"))


def _print_table(summary: dict) -> None:
    header = ["score"] + [title.format(threshold=summary["threshold"]) for _, title in TABLE]
    print(markdown_table(header, [[r["score"], *(r[key] for key, _ in TABLE)] for r in summary["results"]]))
    if summary["coverage"]:
        parts = [f"{name} {c['share']:.1%} ({c['covered']}/{c['total']})" for name, c in summary["coverage"].items()]
        print(f"\nquestion coverage (responses not scored by the fallback): {', '.join(parts)}")
    if summary["unscored"]:
        print(f"\n{summary['unscored']} rows have no score (see their 'error' field in scores.jsonl)")
