"""A leaderboard for any labelled file: which metric agrees with the people who labelled it?

``faithkit meta-eval labels`` reads rows with a label column, scores them with any metrics of the
registry (each into its own resumable ``scores/<metric>.jsonl``), and reports per score and per
group of rows (``--group-by``):

* AUROC (Mann-Whitney, ties count half) with a percentile bootstrap interval over rows;
* the best-F1 threshold, chosen on the same rows (so F1 and balanced accuracy at it are in-sample,
  optimistic figures: a threshold for new data is picked on dev, as ``meta-eval begin`` does);
* paired tests between every two scores: a **paired bootstrap** of the AUROC difference, both
  scores' AUROCs computed on the same resampled rows; the two-sided p-value is twice the smaller
  share of resamples on either side of zero (see :func:`paired_p_value`).

All scores are compared on the same rows: a row that some score leaves empty (e.g. knowledge
precision of a response without content words) is left out of every score, with a warning.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

from ..data import Row, read_results
from ..errors import InputError
from ..jobs import current_process, score_rows
from ..metrics.registry import get_spec
from ..report import markdown_table
from .. import files, provenance
from .. import stats
from .labels import without_missing_labels
from . import plots

logger = logging.getLogger(__name__)

ALL = "all"
LEVEL = 0.05
"""The level a paired difference must pass, after Holm's correction over its group's pairs, to count as real."""
RESULT_COLUMNS = (
    "group",
    "score",
    "n",
    "n_positive",
    "base_rate",
    "auroc",
    "auroc_low",
    "auroc_high",
    "threshold",
    "f1",
    "f1_always_positive",
    "balanced_accuracy",
)
GRADED_COLUMNS = (
    "group",
    "score",
    "n",
    "spearman",
    "spearman_low",
    "spearman_high",
    "kendall",
    "kendall_low",
    "kendall_high",
)
PAIRED_COLUMNS = (
    "group",
    "score_a",
    "score_b",
    "auroc_a",
    "auroc_b",
    "difference",
    "difference_low",
    "difference_high",
    "p_value",
    "p_holm",
)
"""A paired row: the AUROCs of two scores, their difference with its interval, its p-value and that p after Holm's
correction over the group's pairs; graded labels have ``spearman_a``/``spearman_b`` in place of the AUROCs."""


@dataclass
class Labelled:
    """The rows that have a label: 0/1 by ``--positive`` (or graded numbers), and each row's group (None without
    ``--group-by``)."""

    rows: list[Row]
    labels: np.ndarray
    groups: list[str] | None = None
    graded: bool = False
    """Labels are numbers on a scale (no ``--positive``): Spearman and Kendall instead of AUROC and F1."""


def label_rows(
    rows: Sequence[Row], label_column: str, positive: str | None, group_by: str | None = None, strict: bool = False
) -> Labelled:
    """Each readable row's 0/1 label, or without ``positive`` its graded label (a number); an unknown column, a
    ``positive`` no row has, one class only or a graded label that is no number is an InputError.

    A label matches ``positive`` when its text (a JSON value as JSON writes it: ``true``, ``1``) equals it. Rows
    that cannot be read or have no label (NaN, infinity, empty, null: :mod:`.labels`) are left out, with a warning;
    with ``strict`` a row without a label is an InputError.
    """
    readable = [row for row in rows if not row.error]
    if not readable:
        raise InputError(f"no row of the input can be read ({rows[0].error if rows else 'it is empty'})")
    if len(readable) < len(rows):
        first = next(row.error for row in rows if row.error)
        logger.warning("%d rows cannot be read and are left out (the first: %s)", len(rows) - len(readable), first)
    columns = sorted({column for row in readable for column in row.extras})
    for column, flag in ((label_column, "--label-column"), (group_by, "--group-by")):
        if column is not None and column not in columns:
            raise InputError(f"{flag} '{column}' is not a column of the input holding labels; {_columns_hint(columns)}")
    kept = without_missing_labels(
        readable, lambda row: row.extras.get(label_column), f"column '{label_column}'", lambda row: row.id, strict
    )
    values = [_label_text(row.extras[label_column]) for row in kept]
    groups = [_label_text(row.extras.get(group_by)) or "(none)" for row in kept] if group_by else None
    if positive is None:
        return Labelled(kept, _graded(values, kept, label_column), groups, graded=True)
    positive = positive.strip()  # as the labels are read
    seen = sorted(set(values))
    if positive not in seen:
        raise InputError(
            f"--positive '{positive}': no row has it in column '{label_column}', whose values are "
            f"{_listed(seen)}; give one of them"
        )
    if len(seen) == 1:
        raise InputError(
            f"every row of column '{label_column}' is '{positive}', so there is no negative class to "
            f"tell apart; a leaderboard needs rows of both classes"
        )
    return Labelled(kept, np.array([value == positive for value in values], dtype=int), groups)


def _columns_hint(columns: list[str]) -> str:
    """The columns a label can come from; the document, history, response and id columns are read as those."""
    read = "the document, history, response and id columns are read as such"
    if not columns:
        return f"the input has no other column ({read}): add a label column"
    return f"its other columns are {', '.join(repr(column) for column in columns)} ({read})"


def _graded(values: list[str], rows: list[Row], label_column: str) -> np.ndarray:
    """Graded labels as numbers; one that is none, or all alike, is an InputError saying what to do."""
    numbers = []
    for value, row in zip(values, rows):
        try:
            numbers.append(float(value))
        except ValueError:
            raise InputError(
                f"row {row.id}: label '{value}' in column '{label_column}' is no number; without --positive the "
                f"labels are graded (numbers on a scale): give --positive for the positive class of categories"
            ) from None
    if len(set(numbers)) < 2:
        raise InputError(f"every row of column '{label_column}' has the label {values[0]}: nothing to correlate with")
    return np.array(numbers)


def _label_text(value) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else json.dumps(value)


def _listed(values: list[str], most: int = 10) -> str:
    shown = ", ".join(f"'{v}'" for v in values[:most])
    return shown + (f" and {len(values) - most} more" if len(values) > most else "")


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


BOOTSTRAP_BLOCK = 4_000_000
"""Most drawn row indices held at once: resamples are drawn in blocks, so a large file stays in memory."""


def bootstrap_aurocs(scores: np.ndarray, labels: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """AUROC of each score (rows of ``scores``) on the same ``resamples`` draws of the rows: (scores, resamples).

    A draw with one class only has no AUROC (NaN)."""
    rng = np.random.default_rng(seed)
    block = max(1, BOOTSTRAP_BLOCK // len(labels))
    return np.concatenate(
        [
            _drawn_aurocs(scores, labels, rng.integers(0, len(labels), size=(size, len(labels))))
            for size in [block] * (resamples // block) + [resamples % block]
            if size
        ],
        axis=1,
    )


def _drawn_aurocs(scores: np.ndarray, labels: np.ndarray, draws: np.ndarray) -> np.ndarray:
    drawn_labels = labels[draws]
    positives = drawn_labels.sum(axis=1)
    pairs = positives * (len(labels) - positives)
    with np.errstate(invalid="ignore", divide="ignore"):
        aurocs = np.array(
            [
                (
                    (scipy_stats.rankdata(row[draws], axis=1) * drawn_labels).sum(axis=1)
                    - positives * (positives + 1) / 2
                )
                / pairs
                for row in scores
            ]
        )
    return np.where(pairs > 0, aurocs, np.nan)


def bootstrap_correlations(
    scores: np.ndarray, labels: np.ndarray, resamples: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and Kendall correlations of each score (rows of ``scores``) with graded ``labels`` on the same
    ``resamples`` draws of the rows: two (scores, resamples) arrays, NaN for a draw whose labels are all alike."""
    draws = np.random.default_rng(seed).integers(0, len(labels), size=(resamples, len(labels)))
    spearmans = np.full((len(scores), resamples), np.nan)
    kendalls = np.full((len(scores), resamples), np.nan)
    for r, drawn in enumerate(draws):
        for k, row in enumerate(scores):
            spearmans[k, r] = stats.spearman(row[drawn], labels[drawn])
            kendalls[k, r] = stats.kendall(row[drawn], labels[drawn])
    return spearmans, kendalls


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    if np.isnan(values).all():
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided paired-bootstrap p-value that a difference is 0: twice the smaller share of resampled differences
    at or beyond zero on either side, counting the resamples as ``(k + 1) / (resamples + 1)`` so that it is never 0
    (1000 resamples cannot show a p below 0.002); at most 1."""
    differences = differences[~np.isnan(differences)]
    if not len(differences):
        return math.nan
    beyond = min(np.count_nonzero(differences <= 0), np.count_nonzero(differences >= 0))
    return float(min(1.0, 2 * (beyond + 1) / (len(differences) + 1)))


def group_table(
    group: str,
    named_scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[list[dict], list[dict]]:
    """One group's result rows (per score) and paired rows (per two scores, with Holm's correction over them);
    NaN where the group has one class."""
    names = list(named_scores)
    both = labels.min() != labels.max()
    matrix = np.array([named_scores[name] for name in names], dtype=float)
    drawn = bootstrap_aurocs(matrix, labels, resamples, seed) if both else np.full((len(names), 1), np.nan)
    aurocs = [stats.auroc(row, labels) if both else math.nan for row in matrix]
    base_rate = float(labels.mean())
    results = []
    for name, row, auroc, draws in zip(names, matrix, aurocs, drawn):
        at_best = _at_best_f1_threshold(row, labels)
        results.append(
            {
                "group": group,
                "score": name,
                "n": len(labels),
                "n_positive": int(labels.sum()),
                "base_rate": base_rate,
                "auroc": auroc,
                **dict(zip(("auroc_low", "auroc_high"), _percentiles(draws, confidence))),
                "threshold": at_best["threshold"],
                "f1": at_best["f1"],
                "f1_always_positive": 2 * base_rate / (1 + base_rate),  # recall 1, precision the base rate
                "balanced_accuracy": at_best["balanced_accuracy"],
            }
        )
    return results, _paired(group, names, aurocs, drawn, confidence, "auroc")


def graded_table(
    group: str,
    named_scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[list[dict], list[dict]]:
    """:func:`group_table` for graded labels: per score Spearman and Kendall with bootstrap intervals, per two
    scores the paired bootstrap of their Spearman difference (Holm-corrected over the group's pairs)."""
    names = list(named_scores)
    matrix = np.array([named_scores[name] for name in names], dtype=float)
    spearmans, kendalls = bootstrap_correlations(matrix, labels, resamples, seed)
    values = [(stats.spearman(row, labels), stats.kendall(row, labels)) for row in matrix]
    results = [
        {
            "group": group,
            "score": name,
            "n": len(labels),
            "spearman": spearman,
            **dict(zip(("spearman_low", "spearman_high"), _percentiles(spearman_draws, confidence))),
            "kendall": kendall,
            **dict(zip(("kendall_low", "kendall_high"), _percentiles(kendall_draws, confidence))),
        }
        for name, (spearman, kendall), spearman_draws, kendall_draws in zip(names, values, spearmans, kendalls)
    ]
    return results, _paired(group, names, [spearman for spearman, _ in values], spearmans, confidence, "spearman")


def _paired(
    group: str, names: list[str], values: list[float], drawn: np.ndarray, confidence: float, key: str
) -> list[dict]:
    """Every two scores' difference of ``values`` (``key``: what they are) with the percentile interval and paired
    p of their ``drawn`` resampled differences, and that p after Holm's correction over the group's pairs
    (:data:`PAIRED_COLUMNS`)."""
    paired: list[dict] = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            differences = drawn[a] - drawn[b]
            low, high = _percentiles(differences, confidence)
            paired.append(
                {
                    "group": group,
                    "score_a": names[a],
                    "score_b": names[b],
                    f"{key}_a": values[a],
                    f"{key}_b": values[b],
                    "difference": values[a] - values[b],
                    "difference_low": low,
                    "difference_high": high,
                    "p_value": paired_p_value(differences),
                }
            )
    for row, adjusted in zip(paired, stats.holm(np.array([row["p_value"] for row in paired], dtype=float))):
        row["p_holm"] = float(adjusted)
    return paired


def _at_best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> dict:
    """The threshold of the best F1, that F1, and the balanced accuracy there (NaN for a class the labels lack)."""
    threshold = stats.best_f1_threshold(scores, labels)
    predicted = scores >= threshold
    rates = [
        float((predicted[labels == value] == bool(value)).mean()) if (labels == value).any() else math.nan
        for value in (0, 1)
    ]
    return {
        "threshold": threshold,
        "f1": stats.classification(scores, labels, threshold)["f1"],
        "balanced_accuracy": float(np.mean(rates)),
    }


def leaderboard(
    slices: Sequence[tuple[str, dict, np.ndarray]], resamples: int = 1000, seed: int = 0, graded: bool = False
) -> tuple[list[dict], list[dict]]:
    """Result and paired rows of each slice of :func:`row_slices` (``graded``: by :func:`graded_table`)."""
    results, paired = [], []
    table = graded_table if graded else group_table
    for group, scores, labels in slices:
        more, more_paired = table(group, scores, labels, resamples, seed)
        results += more
        paired += more_paired
    return results, paired


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


def print_leaderboard(results: list[dict], paired: list[dict]) -> None:
    if "spearman" in results[0]:
        heads = ["group", "score", "n", "Spearman", "95% interval", "Kendall", "95% interval"]
        keys = ("spearman", "kendall")
        rows = [
            [
                r["group"],
                r["score"],
                r["n"],
                r["spearman"],
                _interval(r, "spearman"),
                r["kendall"],
                _interval(r, "kendall"),
            ]
            for r in results
        ]
    else:
        heads = ["group", "score", "n", "positive", "base rate", "AUROC", "95% interval", "best-F1 threshold",
                 "F1", "F1 always positive", "balanced accuracy"]  # fmt: skip
        keys = ("auroc",)
        rows = [
            [
                r["group"],
                r["score"],
                r["n"],
                r["n_positive"],
                r["base_rate"],
                r["auroc"],
                _interval(r, "auroc"),
                r["threshold"],
                r["f1"],
                r["f1_always_positive"],
                r["balanced_accuracy"],
            ]  # fmt: skip
            for r in results
        ]
    print(markdown_table(heads, rows))
    if paired:
        what = "Spearman" if keys[0] == "spearman" else "AUROC"
        print(
            f"\npaired bootstrap of the {what} difference (same resampled rows for both scores); Holm: p corrected "
            f"over each group's pairs, 'yes' where it stays below {LEVEL:g}:\n"
        )
        print(
            markdown_table(
                ["group", "A", "B", f"{what} A - B", "95% interval", "p", "p (Holm)", "survives Holm"],
                [
                    [
                        p["group"],
                        p["score_a"],
                        p["score_b"],
                        p["difference"],
                        _interval(p, "difference"),
                        p["p_value"],
                        p["p_holm"],
                        "yes" if p["p_holm"] < LEVEL else "no",
                    ]  # fmt: skip
                    for p in paired
                ],
            )
        )


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
    made_by: dict | None = None,
    **job,
) -> tuple[list[dict], list[dict]]:
    """Score, rank and report (see the module's docstring); ``made_by`` is the run's :mod:`faithkit.provenance`
    record for results.json and the printed table (not given: one naming the resamples and seed only), ``job``
    holds :func:`faithkit.jobs.run_job`'s options."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    named_scores = score_metrics(metrics, labelled.rows, out, fingerprints, **job)
    if not named_scores:
        raise InputError(f"no row could be scored; see the 'error' records in {out / 'scores'}")
    slices = row_slices(named_scores, labelled)
    results, paired = leaderboard(slices, resamples, seed, graded=labelled.graded)
    if current_process().is_main:  # under accelerate launch the other processes only score
        made_by = made_by or provenance.record({}, options={"resamples": resamples, "seed": seed})
        write_leaderboard(out, results, paired, *slices[0][1:], made_by=made_by)
        print("\n".join(provenance.header_lines(made_by)) + "\n")
        print_leaderboard(results, paired)
    return results, paired
