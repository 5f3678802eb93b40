"""Meta-evaluation on BEGIN (Dziri et al., TACL 2022): does a score separate attributable responses?

Following the PMI-FAITH paper (§5.1), ``Fully attributable`` is the positive class and
``Generic`` / ``Not fully attributable`` are negative. Each score's threshold is the one
with the best F1 on dev; test is evaluated at the dev threshold. A score whose metric declares
lower values faithful (:func:`~faithkit.metrics.registry.score_direction`) is evaluated low-first:
its AUROC and correlations are those of the faithful direction, its threshold an upper one. Scores are written row by
row to ``scores_<split>.jsonl`` in the output folder, so an interrupted run resumes.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..data import read_results
from ..data.corpora.begin import POSITIVE_LABEL, load_begin
from ..errors import InputError
from ..data.files import replacing, write_json
from ..data.jobs import current_process, score_rows
from ..metrics.lexical import bleu_vs_knowledge, token_f1_overlap
from ..metrics.registry import get_spec, score_direction
from ..report import markdown_table
from .. import stats
from . import plots
from .labels import without_missing_labels
from .leaderboard import DIRECTION_WORDS

BASELINES = {"overlap_f1": token_f1_overlap, "document_bleu": bleu_vs_knowledge}
REPORTED = ("direction", "n", "threshold", "accuracy", "precision", "recall", "f1", "auroc", "spearman", "pearson")


def _scored_records(metric, rows, path: Path, fingerprint: dict | None, job: dict) -> list[dict]:
    score_rows(metric, rows, path, fingerprint=fingerprint, desc=path.stem, flag="--out", **job)
    by_id = {record["id"]: record for record in read_results(path)}
    records = []
    for row in rows:
        record = by_id[row.id]
        if "error" in record:
            continue  # reported by score_rows; an unscorable row has no place in the statistics
        for name, baseline in BASELINES.items():
            record[name] = baseline(row.document, row.response)
        record["label"] = int(row.extras["begin_label"] == POSITIVE_LABEL)
        record["source"] = row.extras.get("data_source", "all")
        records.append(record)
    return records


def _with_labels(rows: list, strict: bool) -> list:
    """The rows but those whose begin_label is missing (:func:`~faithkit.eval.labels.without_missing_labels`); rows
    that cannot be read stay, to become error records as before."""
    labelled = without_missing_labels(
        [row for row in rows if not row.error],
        lambda row: row.extras.get("begin_label"),
        "column 'begin_label'",
        lambda row: row.id,
        strict,
    )
    kept = {id(row) for row in labelled}
    return [row for row in rows if row.error or id(row) in kept]


def _need_both_classes(records: list[dict], split: str, files: list[str]) -> None:
    """Thresholds, AUROC and ROC curves compare the two classes: a split with one of them has nothing to compare."""
    labels = {record["label"] for record in records}
    if len(labels) < 2:
        only = POSITIVE_LABEL if labels == {1} else "Generic / Not fully attributable"
        raise InputError(
            f"--{split} {' '.join(map(str, files))}: all {len(records)} scored rows are labelled '{only}'; "
            f"the meta-evaluation compares attributable responses with the others, so the {split} rows need both"
        )


def meta_eval_begin(
    metric,
    metric_name: str,
    dev: list[str],
    test: list[str],
    out_dir: str,
    fingerprint: dict | None = None,
    strict_labels: bool = False,
    **job,
) -> list[dict]:
    """Score, threshold on dev, report dev and test; return the result rows (also written to ``out_dir``).

    Scores are resumable; ``fingerprint`` (see :func:`faithkit.data.jobs.job_fingerprint`) guards them, and
    ``job`` holds :func:`faithkit.data.jobs.run_job`'s options (``restart``, ``retry_errors``, ``chunk_size``). A row
    without a label (NaN, empty, ...) is left out with a warning, or refused with ``strict_labels``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = {split: _with_labels(load_begin(files), strict_labels) for split, files in (("dev", dev), ("test", test))}
    splits = {"dev": _scored_records(metric, rows["dev"], out / "scores_dev.jsonl", fingerprint, job)}
    if test:
        splits["test"] = _scored_records(metric, rows["test"], out / "scores_test.jsonl", fingerprint, job)
    if not splits["dev"]:
        raise InputError("no dev row could be scored; see the 'error' records in scores_dev.jsonl")
    for split, records in splits.items():
        _need_both_classes(records, split, dev if split == "dev" else test)
    keys = get_spec(metric_name).score_keys
    score_names = list(dict.fromkeys([k for k in keys if k in splits["dev"][0]] + list(BASELINES)))

    thresholds = {
        name: stats.best_f1_threshold(_faithful_side(splits["dev"], name), [r["label"] for r in splits["dev"]])
        for name in score_names
    }
    results = [
        row for split, records in splits.items() for row in _split_results(split, records, score_names, thresholds)
    ]
    if current_process().is_main:  # under accelerate launch the other processes only score
        _write_results(out, splits, score_names, results)
    return results


def _split_results(split: str, records: list[dict], score_names: list[str], thresholds: dict) -> list[dict]:
    """Each score's figures on the split at its dev threshold: over all rows, and per source when there are several."""
    sources = sorted({r["source"] for r in records})
    results = []
    for source in ["all"] + (sources if len(sources) > 1 else []):
        subset = [r for r in records if source == "all" or r["source"] == source]
        labels = [r["label"] for r in subset]
        for name in score_names:
            summary = stats.summarize(_faithful_side(subset, name), labels, thresholds[name])
            if score_direction(name) is False:  # the threshold in the score's own units: faithful at or below it
                summary["threshold"] = -summary["threshold"]
            direction = DIRECTION_WORDS[score_direction(name)]
            results.append({"split": split, "source": source, "score": name, "direction": direction, **summary})
    return results


def _faithful_side(records: list[dict], name: str) -> list:
    """The score ``name`` of each record, negated when lower values are the faithful ones, so higher is faithful."""
    sign = -1 if score_direction(name) is False else 1
    return [sign * r[name] if r[name] is not None else None for r in records]


def _write_results(out: Path, splits: dict, score_names: list[str], results: list[dict]) -> None:
    """ROC curves per split, results.csv and results.json, and the table printed."""
    for split, records in splits.items():
        plots.roc_curves(
            {name: _faithful_side(records, name) for name in score_names},
            [r["label"] for r in records],
            out / f"roc_{split}.png",
            title=f"BEGIN {split}",
        )
    with replacing(out / "results.csv", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["split", "source", "score", *REPORTED], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(results)
    write_json(out / "results.json", results)
    print(
        markdown_table(
            ["split", "source", "score", *REPORTED],
            [[r["split"], r["source"], r["score"], *(r[k] for k in REPORTED)] for r in results],
        )
    )
