"""A leaderboard for any labelled file: which metric agrees with the people who labelled it?

``faithkit meta-eval labels`` reads rows with a label column, scores them with any metrics of the
registry (each into its own resumable ``scores/<metric>.jsonl``), and reports per score and per
group of rows (``--group-by``):

* AUROC (Mann-Whitney, ties count half) with a percentile bootstrap interval over rows, each score taken in the
  direction its metric declares (:func:`~faithkit.metrics.registry.score_direction`): a score where lower is more
  faithful (``faithkit_checker_hallucination``) is ranked low-first, and its threshold reads "at most";
* the best-F1 threshold, chosen on the same rows (so F1 and balanced accuracy at it are in-sample,
  optimistic figures: a threshold for new data is picked on dev, as ``meta-eval begin`` does);
* paired tests between every two scores: a **paired bootstrap** of the AUROC difference, both
  scores' AUROCs computed on the same resampled rows; the two-sided p-value is twice the smaller
  share of resamples on either side of zero (see :func:`paired_p_value`).

All scores are compared on the same rows: a row that some score leaves empty (e.g. knowledge
precision of a response without content words) is left out of every score, with a warning.

The labels are read by :mod:`.labelled`, the statistics are :mod:`.leaderboard_stats`; this module scores the rows,
slices them and writes and prints the tables.
"""

from __future__ import annotations

import csv
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ..data import files
from .. import provenance
from ..data import Row, read_results
from ..errors import InputError
from ..data.jobs import current_process, score_rows
from ..metrics.registry import get_spec, score_direction
from ..report import markdown_table
from . import plots
from .labelled import Labelled
from .leaderboard_stats import (
    GRADED_COLUMNS,
    LEVEL,
    PAIRED_COLUMNS,
    RESULT_COLUMNS,
    leaderboard,
)

__all__ = [
    "ALL",
    "meta_eval_labels",
    "print_leaderboard",
    "row_slices",
    "score_metrics",
    "scores_path",
    "toward_faithful",
    "write_leaderboard",
]

logger = logging.getLogger(__name__)

ALL = "all"


def score_metrics(
    metrics: Mapping[str, object], rows: Sequence[Row], out: Path, fingerprints: Mapping[str, dict], **job
) -> dict[str, list[float | None]]:
    """Every score of every metric per row, in row order: ``{score name: values}``; rows are scored into
    ``out/scores/<metric>.jsonl`` (resumable, guarded by that metric's fingerprint).

    A score is named by its key (``knowledge_precision``); a key two metrics share is ``metric:key``, unless they
    give the same values (pmi-faith read off faith-judge's rows: one score, reported once). A row whose record is
    an error has None for that metric's scores."""
    keyed: dict[tuple[str, str], list] = {}
    for name, metric in metrics.items():
        path = scores_path(out, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        score_rows(metric, rows, path, fingerprint=fingerprints[name], desc=name, flag="--out", **job)
        by_id = {record["id"]: record for record in read_results(path)}
        records = [by_id[row.id] for row in rows]
        for key in get_spec(name).score_keys:
            values = [record.get(key) for record in records]
            if any(value is not None for value in values) and values not in (
                v for (_, k), v in keyed.items() if k == key
            ):
                keyed[name, key] = values
    keys = [key for _, key in keyed]
    return {(key if keys.count(key) == 1 else f"{name}:{key}"): values for (name, key), values in keyed.items()}


DIRECTION_WORDS = {True: "higher", False: "lower", None: "as given"}
"""A result row's ``direction``: which values of the score are the faithful ones (``as given``: the metric declares
none, e.g. P(generic), or no metric declares the key; ranked as its values are)."""


def toward_faithful(named_scores: Mapping[str, Sequence]) -> tuple[dict[str, list], dict[str, bool | None]]:
    """The scores with every lower-is-faithful one negated (so a higher value is always the faithful side: its AUROC
    is the chance a faithful row outranks an unfaithful one), and each score's declared direction."""
    directions = {name: score_direction(name) for name in named_scores}
    oriented = {
        name: [None if value is None else -value for value in values] if directions[name] is False else list(values)
        for name, values in named_scores.items()
    }
    return oriented, directions


def in_own_units(results: list[dict], directions: Mapping[str, bool | None]) -> list[dict]:
    """Result rows computed on :func:`toward_faithful` scores, told back in each score's own units: its ``direction``,
    and the threshold of a lower-is-faithful score as its own value (faithful at or below it)."""
    for row in results:
        direction = directions.get(row["score"])
        row["direction"] = DIRECTION_WORDS[direction]
        if direction is False and "threshold" in row:
            row["threshold"] = -row["threshold"]
    return results


def scores_path(out: Path, metric: str) -> Path:
    """Where ``meta-eval labels`` scores the rows with ``metric``: ``scores/<metric>.jsonl``."""
    return Path(out) / "scores" / f"{metric}.jsonl"


def row_slices(named_scores: Mapping[str, Sequence], labelled: Labelled) -> list[tuple[str, dict, np.ndarray]]:
    """Each slice of the rows (``all``, then each group) as ``(group, scores as arrays, labels)``, on the rows every
    score has a value for; warns about the others, per score, and about groups of one class."""
    present = np.array([[value is not None for value in values] for values in named_scores.values()])
    for name, has in zip(named_scores, present):
        if not has.all():
            logger.warning(
                "%s: %d rows have no value (an empty score or an error record); they are left out of "
                "every score, so that all scores compare on the same rows",
                name,
                int((~has).sum()),
            )
    keep = np.flatnonzero(present.all(axis=0))
    labels = labelled.labels[keep]
    if not len(keep) or labels.min() == labels.max():
        needs = "different labels" if labelled.graded else "rows of both classes"
        raise InputError(
            f"the rows every score has a value for are none or all labelled alike; a leaderboard needs {needs}"
        )
    scores = {name: np.array([values[i] for i in keep.tolist()], dtype=float) for name, values in named_scores.items()}
    slices = [(ALL, scores, labels)]
    groups = np.array(labelled.groups)[keep] if labelled.groups is not None else np.array([])
    for group in sorted(set(groups)):
        inside = groups == group
        if labels[inside].min() == labels[inside].max():
            what = "correlation" if labelled.graded else "AUROC"
            logger.warning("group '%s' has rows labelled alike only: no %s for it", group, what)
        slices.append((group, {name: values[inside] for name, values in scores.items()}, labels[inside]))
    return slices


def write_leaderboard(
    out: Path,
    results: list[dict],
    paired: list[dict],
    scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    made_by: dict | None = None,
) -> None:
    """``results.csv``, ``paired.csv``, ``results.json`` and, for binary labels, ``roc.png``, the ROC curves over
    all rows."""
    graded = "spearman" in results[0]
    shown = GRADED_COLUMNS if graded else RESULT_COLUMNS
    pairs = tuple(column.replace("auroc", "spearman") for column in PAIRED_COLUMNS) if graded else PAIRED_COLUMNS
    for name, rows, columns in (("results.csv", results, shown), ("paired.csv", paired, pairs)):
        with files.replacing(out / name, newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    files.write_json(out / "results.json", {"results": results, "paired": paired, provenance.KEY: made_by})
    if graded:
        return
    plots.roc_curves(
        {name: values.tolist() for name, values in scores.items()},
        labels.tolist(),
        out / "roc.png",
        title=f"ROC over {len(labels)} rows",
    )


SHOWN = (
    ("group", "group"), ("score", "score"), ("faithful", "direction"), ("n", "n"), ("positive", "n_positive"),
    ("base rate", "base_rate"), ("AUROC", "auroc"), ("95% interval", "auroc_interval"),
    ("best-F1 threshold", "threshold"), ("F1", "f1"),
    ("F1 always positive", "f1_always_positive"), ("balanced accuracy", "balanced_accuracy"),
)  # fmt: skip
"""The printed table's columns, ``(heading, key)``; a key ``X_interval`` shows ``X_low``–``X_high``; ``faithful`` says
which values of the score are the faithful ones (``lower``: faithful at or below the threshold)."""
SHOWN_GRADED = (
    ("group", "group"), ("score", "score"), ("faithful", "direction"), ("n", "n"), ("Spearman", "spearman"),
    ("95% interval", "spearman_interval"), ("Kendall", "kendall"), ("95% interval", "kendall_interval"),
)  # fmt: skip
SHOWN_PAIRED = (
    ("group", "group"), ("A", "score_a"), ("B", "score_b"), ("{what} A - B", "difference"),
    ("95% interval", "difference_interval"), ("p", "p_value"), ("p (Holm)", "p_holm"), ("survives Holm", "survives"),
)  # fmt: skip


def _table(columns: Sequence[tuple[str, str]], rows: list[dict], what: str = "") -> str:
    def cell(row: dict, key: str):
        if key.endswith("_interval"):
            return _interval(row, key.removesuffix("_interval"))
        if key == "survives":
            return "yes" if row["p_holm"] < LEVEL else "no"
        return row[key]

    return markdown_table(
        [head.format(what=what) for head, _ in columns], [[cell(r, k) for _, k in columns] for r in rows]
    )


def print_leaderboard(results: list[dict], paired: list[dict]) -> None:
    """The result rows as a table, then the paired rows with what their tests say."""
    graded = "spearman" in results[0]
    print(_table(SHOWN_GRADED if graded else SHOWN, results))
    if paired:
        what = "Spearman" if graded else "AUROC"
        print(
            f"\npaired bootstrap of the {what} difference (same resampled rows for both scores); Holm: p corrected "
            f"over each group's pairs, 'yes' where it stays below {LEVEL:g}:\n"
        )
        print(_table(SHOWN_PAIRED, paired, what))


def _interval(row: dict, key: str) -> str:
    low, high = row[f"{key}_low"], row[f"{key}_high"]
    return "nan" if math.isnan(low) else f"{low:.3f}–{high:.3f}"


def meta_eval_labels(
    metrics: Mapping[str, object],
    labelled: Labelled,
    out_dir,
    fingerprints: Mapping[str, dict],
    resamples: int = 1000,
    seed: int = 0,
    made_by: Callable[[], dict] | None = None,
    **job,
) -> tuple[list[dict], list[dict]]:
    """Score, rank and report (see the module's docstring); ``made_by`` makes the run's :mod:`faithkit.provenance`
    record for results.json and the printed table once the scores are in (not given: one naming the resamples and
    seed only), ``job`` holds :func:`faithkit.data.jobs.run_job`'s options."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    named_scores = score_metrics(metrics, labelled.rows, out, fingerprints, **job)
    if not named_scores:
        raise InputError(f"no row could be scored; see the 'error' records in {out / 'scores'}")
    oriented, directions = toward_faithful(named_scores)
    slices = row_slices(oriented, labelled)
    results, paired = leaderboard(slices, resamples, seed, graded=labelled.graded)
    in_own_units(results, directions)
    if current_process().is_main:  # under accelerate launch the other processes only score
        record = made_by() if made_by else provenance.record({}, options={"resamples": resamples, "seed": seed})
        write_leaderboard(out, results, paired, *slices[0][1:], made_by=record)
        print("\n".join(provenance.header_lines(record)) + "\n")
        print_leaderboard(results, paired)
    return results, paired
