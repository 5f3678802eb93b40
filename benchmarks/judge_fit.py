"""Fit the faithfulness judge on cached dev features and evaluate it honestly; optionally write the shipped weights.

Reads the folders ``benchmarks/judge_features.py`` wrote. For every single signal and every
tried judge (feature set x L2 strength), on each dev set (BEGIN dev WoW / CMU-DoG / TC, Q²
dodeca consistent vs inconsistent), it reports AUROC with a 95% bootstrap interval (1,000
row resamples, seeded):

* ``in-source``: 5-fold out-of-fold predictions inside the set (stratified, seeded);
* ``transfer``: fitted on the other two BEGIN sources, tested on this one (dodeca: fitted on
  all three BEGIN sources; dodeca is never fitted on);
* ``pooled``: 5-fold out-of-fold over all BEGIN rows (stratified by set and label), the honest
  figure of the shipped judge, which is fitted on all of them (dodeca: fitted on all BEGIN rows).

Intervals are computed for the single signals and the chosen judge (the grid reports AUROC only).

The judge chosen is the one of at most :data:`MAX_FEATURES` features with the best mean pooled
AUROC over the three BEGIN sources (ties: fewer features): a cross-validated choice, never an in-sample fit; dodeca plays no part in it.
``--write`` fits it on all BEGIN dev rows and saves the weights. The last line is one JSON
object with every figure.

    python benchmarks/judge_fit.py runs/judge_features [--write runs/judge_weights.json]

``--write`` refuses a path inside the package: shipping the weights is copying the written file to
``faithkit/metrics/judge_weights.json`` in a commit of its own.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from faithkit.data import read_results
from faithkit import stats
from faithkit.metrics.faith_judge import CANDIDATES, fit_judge, signals
from faithkit.stats import fit_logistic
from faithkit.metrics.lexical import knowledge_precision

BEGIN = ("wow", "cmu", "tc")
SETS = (*BEGIN, "dodeca")
L2 = (0.001, 0.01, 0.1)
MAX_FEATURES = 6
PACKAGE = Path(__file__).resolve().parents[1] / "faithkit"
"""The chosen judge has at most this many features (few, as the data supports; ``all`` is reported, not shipped)."""
FEATURE_SETS = {
    "kp": ("knowledge_precision",),
    "pmi": ("pmi",),
    "kp+pmi": ("knowledge_precision", "pmi"),
    "kp+pmi+softmin": ("knowledge_precision", "pmi", "pmi_softmin"),
    "kp+softmin": ("knowledge_precision", "pmi_softmin"),
    "kp+pmi+softmin+upmi": ("knowledge_precision", "pmi", "pmi_softmin", "uncond_pmi"),
    "kp+pmi+softmin+min": ("knowledge_precision", "pmi", "pmi_softmin", "pmi_min"),
    "kp+pmi+softmin+neg_share": ("knowledge_precision", "pmi", "pmi_softmin", "negative_pmi_share"),
    "kp+pmi+softmin+js_neg": ("knowledge_precision", "pmi", "pmi_softmin", "js_weighted_negative_pmi"),
    "kp+pmi+softmin+conflict": ("knowledge_precision", "pmi", "pmi_softmin", "conflict_max"),
    "kp+pmi+softmin+js_mean": ("knowledge_precision", "pmi", "pmi_softmin", "js_mean"),
    "kp+pmi+softmin+fluency": ("knowledge_precision", "pmi", "pmi_softmin", "logp_history"),
    "kp+pmi+softmin+length": ("knowledge_precision", "pmi", "pmi_softmin", "log_words"),
    "kp+f1+pmi+softmin": ("knowledge_precision", "overlap_f1", "pmi", "pmi_softmin"),
    "kp+pmi+fluency+length": ("knowledge_precision", "pmi", "logp_history", "log_words"),
    "kp+pmi+upmi+fluency+length": ("knowledge_precision", "pmi", "uncond_pmi", "logp_history", "log_words"),
    "kp+pmi+softmin+js_mean+fluency+length": (
        "knowledge_precision",
        "pmi",
        "pmi_softmin",
        "js_mean",
        "logp_history",
        "log_words",
    ),
    "kp+f1+pmi+js_mean+fluency+length": (
        "knowledge_precision",
        "overlap_f1",
        "pmi",
        "js_mean",
        "logp_history",
        "log_words",
    ),
    "evidence": (
        "knowledge_precision",
        "pmi",
        "pmi_softmin",
        "negative_pmi_share",
        "js_mean",
        "conflict_max",
        "js_weighted_negative_pmi",
    ),
    "checker": ("checker_supported",),
    "checker+hall": ("checker_supported", "checker_hallucination"),
    "kp+checker": ("knowledge_precision", "checker_supported"),
    "kp+pmi+checker": ("knowledge_precision", "pmi", "checker_supported"),
    "kp+pmi+checker+hall": ("knowledge_precision", "pmi", "checker_supported", "checker_hallucination"),
    "kp+pmi+softmin+checker+hall": (
        "knowledge_precision",
        "pmi",
        "pmi_softmin",
        "checker_supported",
        "checker_hallucination",
    ),
    "kp+pmi+fluency+length+checker+hall": (
        "knowledge_precision",
        "pmi",
        "logp_history",
        "log_words",
        "checker_supported",
        "checker_hallucination",
    ),
    "kp+pmi+js_mean+fluency+length+checker": (
        "knowledge_precision",
        "pmi",
        "js_mean",
        "logp_history",
        "log_words",
        "checker_supported",
    ),
    "all": CANDIDATES,
}


def load(folders: list[str], checker: str | None = None) -> tuple[list[dict], np.ndarray, np.ndarray, dict]:
    """Signal dicts, labels and dev-set names of every scored row (with the claim checker's scores from ``checker``,
    ``benchmarks/checker_eval.py``'s dev file, where given); and how many rows had no score."""
    checked = {record["id"]: record for record in read_results(checker)} if checker else {}
    table, labels, sets, unscored = [], [], [], 0
    for folder in folders:
        assigned = json.loads((Path(folder) / "labels.json").read_text())
        for record in read_results(Path(folder) / "features.jsonl"):
            if "error" in record or record["id"] not in assigned or (checker and record["id"] not in checked):
                unscored += 1
                continue
            record = {**record, **checked.get(record["id"], {})}
            name, label = assigned[record["id"]]
            table.append(signals(record, record["document"], record["response"]))
            table[-1]["kp_defined"] = knowledge_precision(record["document"], record["response"]) is not None
            labels.append(label)
            sets.append(name)
    return table, np.array(labels), np.array(sets), {"unscored": unscored}


def auroc_with_interval(scores, labels, resamples: int = 1000, seed: int = 0) -> dict:
    """AUROC and its 95% percentile bootstrap interval (rows resampled; resamples with one class skipped)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels)
    figure = {"auroc": round(stats.auroc(scores, labels), 4)}
    if not resamples:
        return figure
    picks = np.random.default_rng(seed).integers(0, len(scores), size=(resamples, len(scores)))
    ranks, positive = rankdata(scores[picks], axis=1), labels[picks] == 1
    n_pos = positive.sum(1)
    n_neg = len(scores) - n_pos
    both = (n_pos > 0) & (n_neg > 0)
    u = (ranks * positive).sum(1) - n_pos * (n_pos + 1) / 2
    low, high = np.percentile(u[both] / (n_pos[both] * n_neg[both]), [2.5, 97.5])
    return {**figure, "low": round(float(low), 4), "high": round(float(high), 4)}


def matrix(table: list[dict], features) -> np.ndarray:
    return np.array([[row[f] for f in features] for row in table], dtype=float)


def fit_and_score(x_train, y_train, x_test, l2: float) -> np.ndarray:
    """Logits of ``x_test`` under a judge fitted on the training rows (as :func:`fit_judge` fits it)."""
    means, stds = x_train.mean(0), x_train.std(0)
    stds[stds == 0] = 1.0
    coefficients, intercept = fit_logistic((x_train - means) / stds, y_train, l2)
    return intercept + (x_test - means) / stds @ coefficients


def folds_of(groups: np.ndarray, folds: int = 5, seed: int = 0) -> np.ndarray:
    """A fold per row, each group (label, or dev set and label) spread evenly over the folds; seeded."""
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(groups), dtype=int)
    for group in np.unique(groups):
        members = rng.permutation(np.flatnonzero(groups == group))
        fold_of[members] = np.arange(len(members)) % folds
    return fold_of


def out_of_fold(x, labels, groups, l2, folds: int = 5) -> np.ndarray:
    """Each row's score from a judge fitted on the other folds."""
    fold_of, scores = folds_of(groups, folds), np.empty(len(labels))
    for fold in range(folds):
        train, test = fold_of != fold, fold_of == fold
        scores[test] = fit_and_score(x[train], labels[train], x[test], l2)
    return scores


def evaluate_judge(x, labels, sets, l2, resamples: int = 0) -> dict:
    """Per dev set: ``in_source`` (5-fold inside the set), ``transfer`` (fitted on the other BEGIN sources; dodeca:
    on all three) and ``pooled`` (5-fold over all BEGIN rows, as the shipped judge is fitted; dodeca: fitted on all
    BEGIN rows) AUROC, with intervals when ``resamples``."""
    begin = np.isin(sets, BEGIN)
    pooled = np.full(len(labels), np.nan)
    pooled[begin] = out_of_fold(x[begin], labels[begin], np.char.add(sets[begin], labels[begin].astype(str)), l2)
    pooled[~begin] = fit_and_score(x[begin], labels[begin], x[~begin], l2)
    result = {}
    for name in SETS:
        inside = sets == name
        train = np.isin(sets, [s for s in BEGIN if s != name])
        transfer = fit_and_score(x[train], labels[train], x[inside], l2)
        in_source = out_of_fold(x[inside], labels[inside], labels[inside], l2)
        result[name] = {
            kind: auroc_with_interval(values, labels[inside], resamples)
            for kind, values in (("in_source", in_source), ("transfer", transfer), ("pooled", pooled[inside]))
        }
    return result


def single_signals(table, labels, sets) -> dict:
    """AUROC of each signal alone (higher = more faithful; the sign as is) on every dev set; ``knowledge_precision``
    as the ``lexical`` metric reports it (rows without content words left out), ``kp_as_0`` with them as 0."""
    result = {}
    for key in (key for key in CANDIDATES if key in table[0]):
        result["kp_as_0" if key == "knowledge_precision" else key] = {
            name: auroc_with_interval([table[i][key] for i in np.flatnonzero(sets == name)], labels[sets == name])
            for name in SETS
        }
    result["knowledge_precision"] = {
        name: auroc_with_interval([table[i]["knowledge_precision"] for i in rows], labels[rows])
        for name in SETS
        for rows in [np.flatnonzero((sets == name) & np.array([r["kp_defined"] for r in table]))]
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--write", help="save the chosen judge, fitted on all BEGIN dev rows, to this JSON file")
    parser.add_argument("--markdown", help="also write the tables docs/judge.md shows to this file")
    parser.add_argument("--model", default="smollm2-135m", help="the judge LM the features were computed with")
    parser.add_argument(
        "--checker", help="the claim checker's scores of the dev rows (checker_eval.py's dev_checker.jsonl)"
    )
    args = parser.parse_args()
    if args.write and Path(args.write).resolve().is_relative_to(PACKAGE):
        parser.error(
            f"--write {args.write} is inside the package; write under runs/ and copy the file to "
            "faithkit/metrics/judge_weights.json in a commit of its own"
        )
    table, labels, sets, counts = load(args.folders, args.checker)
    counts.update({name: int((sets == name).sum()) for name in SETS})
    print("rows:", counts)
    figures = {"rows": counts, "signals": single_signals(table, labels, sets), "judges": {}}
    for key, per_set in figures["signals"].items():
        print(f"signal {key:28s}", "  ".join(f"{n} {v['auroc']:.3f}" for n, v in per_set.items()))
    for name, features in FEATURE_SETS.items():
        if not all(feature in table[0] for feature in features):
            continue  # the checker's judges without --checker; "all" without uncond_pmi
        x = matrix(table, features)
        for l2 in L2:
            result = evaluate_judge(x, labels, sets, l2)
            figures["judges"][f"{name}@{l2}"] = result
            print(
                f"judge {name:28s} l2={l2:<6}",
                "  ".join(
                    f"{n} {r['in_source']['auroc']:.3f}/{r['transfer']['auroc']:.3f}/{r['pooled']['auroc']:.3f}"
                    for n, r in result.items()
                ),
            )
    few = [k for k in figures["judges"] if len(FEATURE_SETS[k.split("@")[0]]) <= MAX_FEATURES]
    chosen = max(
        few,
        key=lambda k: (
            np.mean([figures["judges"][k][n]["pooled"]["auroc"] for n in BEGIN]),
            -len(FEATURE_SETS[k.split("@")[0]]),
        ),
    )
    figures["chosen"] = chosen
    name, l2 = chosen.split("@")
    figures["judges"][chosen] = evaluate_judge(
        matrix(table, FEATURE_SETS[name]), labels, sets, float(l2), resamples=1000
    )
    print("chosen (best mean pooled BEGIN AUROC):", chosen, json.dumps(figures["judges"][chosen]))
    if args.write:
        begin = np.flatnonzero(np.isin(sets, BEGIN))
        weights = fit_judge(
            [table[i] for i in begin],
            labels[begin],
            FEATURE_SETS[name],
            float(l2),
            args.model,
            f"BEGIN dev WoW+CMU-DoG+TC ({len(begin)} rows; positive = Fully attributable)",
        )
        weights.save(args.write)
        figures["shipped_on_dodeca"] = auroc_with_interval(
            [weights.logit(table[i]) for i in np.flatnonzero(sets == "dodeca")], labels[sets == "dodeca"]
        )
        print("shipped judge on dodeca:", figures["shipped_on_dodeca"])
    if args.markdown:
        Path(args.markdown).write_text(markdown(figures))
    print(json.dumps(figures))


def _interval(figure: dict) -> str:
    return (
        f"{figure['auroc']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"
        if "low" in figure
        else f"{figure['auroc']:.3f}"
    )


def markdown(figures: dict) -> str:
    """The signal table, the chosen judge's in-source and transfer table and the whole grid, as markdown."""
    rows = figures["rows"]
    head = "| | " + " | ".join(f"{name} ({rows[name]})" for name in SETS) + " |\n|---" + "|---" * len(SETS) + "|\n"
    signal_table = head + "".join(
        f"| {key} | " + " | ".join(_interval(per_set[n]) for n in SETS) + " |\n"
        for key, per_set in figures["signals"].items()
    )
    chosen = figures["judges"][figures["chosen"]]
    judge_table = head + "".join(
        f"| {figures['chosen']} {kind} | " + " | ".join(_interval(chosen[n][kind]) for n in SETS) + " |\n"
        for kind in ("in_source", "transfer", "pooled")
    )
    grid = head + "".join(
        f"| {name} | "
        + " | ".join(
            f"{r[n]['in_source']['auroc']:.3f} / {r[n]['transfer']['auroc']:.3f} / {r[n]['pooled']['auroc']:.3f}"
            for n in SETS
        )
        + " |\n"
        for name, r in figures["judges"].items()
    )
    shipped = figures.get("shipped_on_dodeca")
    return (
        f"### Single signals (AUROC [95% bootstrap interval])\n\n{signal_table}\n"
        f"### The chosen judge\n\n{judge_table}\n"
        + (f"Shipped weights (fitted on all BEGIN rows) on dodeca: {_interval(shipped)}\n\n" if shipped else "")
        + f"### Every judge tried (in-source / transfer / pooled AUROC)\n\n{grid}"
    )


if __name__ == "__main__":
    main()
