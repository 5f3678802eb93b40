"""Fit the claim checker's reading (P(faithful) from its three probabilities, and a verdict threshold) on rated
responses, and write it next to the adapter as reading.json (faithkit/metrics/checker_reading.py says what it is).

Reads a rated file (``faithkit annotate export``: every rater's faithfulness answer) and the checker's scores of the
same rows (``faithkit score --metric faithkit-checker --input RATED --output SCORED``, with ``--nli-model ADAPTER``
for another adapter); a response is faithful when no rater disagreed. ``--held-out DATA/test.jsonl`` keeps only the
rated responses the checker's data held out of training (its ``rated_*`` test examples). Prints, beside the fitted
reading, the same figures for the unfitted reading (1 - P(unsupported)) and for P(supported), in-sample and 5-fold
cross-validated (folds by document, so both systems' responses to a context stay together; each fold's
threshold chosen on the other folds), and ends with one JSON line.

    faithkit score --metric faithkit-checker --nli-model runs/checker-gemma/adapter \\
        --input benchmarks/data/ratings/rated-valid_freq.jsonl --output runs/rated/scored.jsonl
    python benchmarks/checker_reading_fit.py benchmarks/data/ratings/rated-valid_freq.jsonl runs/rated/scored.jsonl \\
        --held-out runs/checker-data-rated/test.jsonl --write runs/checker-gemma/adapter
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from faithkit import stats
from faithkit.checker.examples import read as read_examples
from faithkit.checker.rated import read_rated
from faithkit.data import read_results
from faithkit.metrics.checker_reading import Reading, fit_reading

FOLDS = 5
PACKAGE = Path(__file__).resolve().parents[1] / "faithkit"


def figures(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict:
    """AUROC, balanced accuracy at ``threshold`` and expected calibration error of P(faithful) ``scores``."""
    return {
        "auroc": round(stats.auroc(scores, labels), 4),
        "balanced_accuracy": round(stats.balanced_accuracy(scores, labels, threshold), 4),
        "expected_calibration_error": round(stats.expected_calibration_error(scores, labels), 4),
        "threshold": round(threshold, 4),
    }


def cross_validated(triples: list, labels: np.ndarray, groups: list[str], l2: float) -> dict:
    """Each response's P(faithful) from a reading fitted on the other folds, and its verdict at their threshold."""
    fold = np.array([int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) % FOLDS for group in groups])
    scores, verdicts = np.zeros(len(labels)), np.zeros(len(labels), dtype=bool)
    for number in range(FOLDS):
        train, test = fold != number, fold == number
        if not test.any():
            continue
        reading = fit_reading([t for t, keep in zip(triples, train) if keep], labels[train], "fold", l2)
        for index in np.flatnonzero(test):
            scores[index] = reading.faithful(triples[index])
            verdicts[index] = reading.verdict(scores[index])
    balanced = (verdicts[labels == 1].mean() + (~verdicts[labels == 0]).mean()) / 2
    return {
        "auroc": round(stats.auroc(scores, labels), 4),
        "balanced_accuracy": round(float(balanced), 4),
        "expected_calibration_error": round(stats.expected_calibration_error(scores, labels), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rated", help="rated responses (faithkit annotate export)")
    parser.add_argument("scored", help="the checker's scores of the same rows (faithkit score)")
    parser.add_argument("--key", default="faithkit_checker", help="the checker metric's first score key")
    parser.add_argument("--held-out", help="a checker data test.jsonl: keep the rated responses it holds")
    parser.add_argument("--l2", type=float, default=0.01, help="L2 penalty of the logistic regression")
    parser.add_argument("--write", help="adapter folder to write reading.json into")
    args = parser.parse_args()
    if args.write and Path(args.write).resolve().is_relative_to(PACKAGE):
        parser.error(
            f"--write {args.write} is inside the package; write into an adapter folder under runs/ and copy its "
            "reading.json into the package in a commit of its own"
        )
    rated = {row["id"]: row for row in read_rated(args.rated)}
    if args.held_out:
        kept = {e.source.removeprefix("rated:") for e in read_examples(args.held_out) if e.kind.startswith("rated_")}
        rated = {key: row for key, row in rated.items() if key in kept}
    keys = [f"{args.key}_{name}" for name in ("supported", "generic", "hallucination")]
    scored = {r["id"]: r for r in read_results(args.scored) if "error" not in r and r["id"] in rated}
    ids = sorted(scored)
    triples = [[scored[i][key] for key in keys] for i in ids]
    labels = np.array([int("disagree" not in rated[i]["ratings"]["faithfulness"].values()) for i in ids])
    groups = [rated[i]["document"] for i in ids]
    what = f"{len(ids)} rated responses of {args.rated}" + (f" held out by {args.held_out}" if args.held_out else "")
    reading = fit_reading(triples, labels, f"{what}; faithful = no rater disagreed", args.l2)
    measures = {
        "fitted": np.array([reading.faithful(t) for t in triples]),
        "one_minus_unsupported": np.array([Reading().faithful(t) for t in triples]),
        "supported": np.array([t[0] for t in triples]),
    }
    result: dict = {"responses": len(ids), "faithful": int(labels.sum()), "in_sample": {}}
    for name, scores in measures.items():
        threshold = reading.threshold if name == "fitted" else stats.best_balanced_threshold(scores, labels)
        result["in_sample"][name] = figures(scores, labels, threshold)
        print(name, json.dumps(result["in_sample"][name]))
    result["cross_validated"] = cross_validated(triples, labels, groups, args.l2)
    print("fitted, cross-validated", json.dumps(result["cross_validated"]))
    result["reading"] = {
        "coefficients": reading.coefficients,
        "intercept": reading.intercept,
        "threshold": reading.threshold,
    }
    if args.write:
        fitted = Reading(
            reading.coefficients,
            reading.intercept,
            reading.threshold,
            reading.fitted_on,
            {**reading.figures, "cross_validated": result["cross_validated"]},
        )
        result["written"] = str(fitted.save(args.write))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
