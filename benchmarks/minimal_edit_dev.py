"""The minimal-edit contrast on the dev files: its AUROCs, and its cost beside PMI-FAITH's on the same rows.

Files: BEGIN dev WoW / CMU-DoG / Topical-Chat (positive ``Fully attributable``) and Q² dodeca
(consistent positive, the two CSVs together); ``--sample N`` takes the first N rows of a seeded
shuffle of each file (so a smaller sample is part of a larger one). Rows go in chunks of ``--chunk``
in that order, each sorted by document (as ``faithkit score`` orders rows), so a run stopped early
has scored a random part of the file;
on the ``--cost-files`` each chunk is scored by PMI-FAITH (the two views ``log P(r|d,h)``,
``log P(r|h)``, as the contrast uses) and then by the contrast, each timed (wall and process CPU)
in this one process, with the same model and threads; elsewhere by the contrast alone. Per-row features go
to ``--features/<file>.jsonl`` as each chunk finishes (keys ``file_row``: the row's index in its
file, 0-based; ``id``; ``label``; ``pmi``; then :func:`faithkit.metrics.minimal_edit.contrast_features`'s
keys; ``pmi`` is None off the cost files), and a rerun resumes from it (the timings then cover only
the new rows).

Signals, each oriented so that higher means faithful: ``minimal_edit`` (minus the best margin,
clipped at 0), ``-logp_margin`` and ``-pmi_margin`` (rows without an edit: 0), and ``pmi`` where scored.
AUROC intervals: 1,000 bootstrap resamples of the rows, 95 % percentile.

    nice -n 5 python benchmarks/minimal_edit_dev.py [--files begin_dev_cmu.tsv ...] [--sample N] [--features DIR]

``--sample 0`` scores nothing and reports on the rows the feature files already hold.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from faithkit.serving import models
from faithkit.data import data_root, read_rows
from faithkit.data.corpora.q2_wow import load_q2_wow
from faithkit import stats
from faithkit.metrics import PMIFaith
from faithkit.metrics.minimal_edit import ScoringLM, contrast_features

BEGIN_FILES = ("begin_dev_wow.tsv", "begin_dev_cmu.tsv", "begin_dev_tc.tsv")
Q2_FILES = ("dodeca_consistent.csv", "dodeca_inconsistent.csv")
SIGNALS = {
    "minimal_edit": lambda r: r["minimal_edit"],
    "-logp_margin": lambda r: -(r["contrast_logp_margin"] or 0.0),
    "-pmi_margin": lambda r: -(r["contrast_pmi_margin"] or 0.0),
    "pmi": lambda r: r["pmi"],
}


def labelled_rows(name: str, sample: int | None) -> list[tuple[int, object, int]]:
    """``(index in file, row, label)`` of a dev file's readable rows, shuffled (seed 0); the first ``sample``."""
    if name in Q2_FILES:
        set_name = name.split("_")[1].split(".")[0]
        rows = load_q2_wow(data_root() / "q2_wow" / name, set_name)
        labelled = [(i, row, int(set_name == "consistent")) for i, row in enumerate(rows)]
    else:
        rows = list(read_rows(data_root() / "begin" / name))
        labelled = [
            (i, row, int(row.extras.get("begin_label") == "Fully attributable"))
            for i, row in enumerate(rows)
            if not row.error
        ]
    return [labelled[i] for i in np.random.default_rng(0).permutation(len(labelled))[:sample]]


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def score_file(name: str, metric: PMIFaith, args) -> dict:
    """Score the file's rows not yet in its features file; the seconds each side took on them."""
    path = Path(args.features) / f"{Path(name).stem}.jsonl"
    done = {json.loads(line)["file_row"] for line in path.open()} if path.exists() else set()
    todo = [item for item in labelled_rows(name, args.sample) if item[0] not in done]
    seconds = {"pmi_faith_wall": 0.0, "pmi_faith_cpu": 0.0, "contrast_wall": 0.0, "contrast_cpu": 0.0}
    with path.open("a") as out:
        for first in range(0, len(todo), args.chunk):
            chunk = sorted(todo[first : first + args.chunk], key=lambda item: item[1].document)
            columns = (
                [r.document for _, r, _ in chunk],
                [r.history for _, r, _ in chunk],
                [r.response for _, r, _ in chunk],
            )
            pmi_rows = [{"pmi": None}] * len(chunk)
            if name in args.cost_files:
                pmi_rows, wall, cpu = timed(lambda columns=columns: metric.compute_rows(*columns))
                seconds["pmi_faith_wall"] += wall
                seconds["pmi_faith_cpu"] += cpu
            features, wall, cpu = timed(
                lambda columns=columns: contrast_features(
                    ScoringLM(metric.scorer, metric.tokenizer, metric.template), *columns
                )
            )
            seconds["contrast_wall"] += wall
            seconds["contrast_cpu"] += cpu
            for (index, row, label), pmi_row, row_features in zip(chunk, pmi_rows, features):
                out.write(
                    json.dumps({"file_row": index, "id": row.id, "label": label, "pmi": pmi_row["pmi"], **row_features})
                    + "\n"
                )
            out.flush()
            print(f"{name}: {first + len(chunk)}/{len(todo)} rows; {seconds}", flush=True)
    return {"rows_timed": len(todo), **{k: round(v, 1) for k, v in seconds.items()}}


def auroc_with_interval(scores, labels, resamples: int = 1000) -> dict:
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels)
    if len(set(labels.tolist())) < 2:
        return {"auroc": None, "low": None, "high": None}
    rng = np.random.default_rng(0)
    values = []
    for _ in range(resamples):
        pick = rng.integers(0, len(scores), len(scores))
        if labels[pick].min() != labels[pick].max():
            values.append(stats.auroc(scores[pick], labels[pick]))
    if not values:  # a tiny or one-class sample
        return {"auroc": None, "low": None, "high": None}
    low, high = np.percentile(values, [2.5, 97.5])
    return {"auroc": round(stats.auroc(scores, labels), 3), "low": round(float(low), 3), "high": round(float(high), 3)}


def file_figures(records: list[dict]) -> dict:
    labels = [r["label"] for r in records]
    figures = {
        "rows": len(records),
        "positive": sum(labels),
        "with_edits": sum(r["contrast_edits"] > 0 for r in records),
        "with_contradicted_span": sum(bool(r["contradicted_spans"]) for r in records),
        "mean_edits": round(float(np.mean([r["contrast_edits"] for r in records])), 2),
    }
    for signal, value in SIGNALS.items():
        if signal == "pmi" and records[0]["pmi"] is None:
            continue
        figures[signal] = auroc_with_interval([value(r) for r in records], labels)
    edited = [r for r in records if r["contrast_edits"] > 0]
    figures["-logp_margin, rows with edits"] = auroc_with_interval(
        [-r["contrast_logp_margin"] for r in edited], [r["label"] for r in edited]
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--files", nargs="+", default=[*BEGIN_FILES, *Q2_FILES])
    parser.add_argument("--sample", type=int, default=None, help="N readable rows of each file, at random (seed 0)")
    parser.add_argument(
        "--cost-files",
        nargs="*",
        default=["begin_dev_cmu.tsv"],
        help="files where PMI-FAITH is timed beside the contrast",
    )
    parser.add_argument("--chunk", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--features", default="runs/contrast-features", help="folder of the per-row feature files")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    Path(args.features).mkdir(parents=True, exist_ok=True)
    model, tokenizer = models.load(args.model)
    metric = PMIFaith(model=model, tokenizer=tokenizer, unconditional=False)
    figures = {"model": args.model, "threads": args.threads}
    for name in args.files:
        figures[name] = {"cost": score_file(name, metric, args)}
    for group in [[name] for name in args.files if name not in Q2_FILES] + (
        [[n for n in args.files if n in Q2_FILES]] if any(n in Q2_FILES for n in args.files) else []
    ):
        records = [
            json.loads(line) for name in group for line in (Path(args.features) / f"{Path(name).stem}.jsonl").open()
        ]
        key = "q2_dodeca" if group[0] in Q2_FILES else group[0]
        figures.setdefault(key, {}).update(file_figures(records))
        print(key, json.dumps(figures[key]), flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
