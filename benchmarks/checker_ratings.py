"""Does a judge agree with people who rated generated responses? The claim checker beside PMI-FAITH and knowledge precision.

Reads an annotation task (``faithkit annotate build``: its key.json holds every rated response with its
document and history) and the raters' exports, scores every rated response with ``faithkit-checker``,
PMI-FAITH (SmolLM2-135M) and knowledge precision, and reports per measure:

* AUROC for telling the responses some rater marked Disagree on faithfulness (a claim the document does not
  support) from the rest (Neutral, a generic reply, counts with the rest), with a 95% bootstrap interval;
* AUROC for telling the responses rated Agree by every rater from the rest;
* Spearman's rho with the mean faithfulness rating (Agree 2, Neutral 1, Disagree 0) and its Fisher z interval.

The raters' answers are levels here: Agree 2, Neutral 1, Disagree 0. The checker is scored as its P(faithful) (its
first score key, the adapter's reading), P(supported) and 1 - P(unsupported) (which leaves a generic reply on the
faithful side, as the page's Neutral does). The last line is one JSON object with every figure.

    python benchmarks/checker_ratings.py runs/human/task benchmarks/data/answers-lead-301f4c77190f.json

(the task made as ``benchmarks/checker_rating_rows.py`` says; that export is the lead developer's ratings)
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from faithkit import stats
from faithkit.annotate.exports import read_annotations
from faithkit.annotate.task import DIMENSIONS, SYSTEMS, System, read_key
from faithkit.eval.leaderboard_stats import group_table
from faithkit.metrics.claim_checkers import ClaimChecker
from faithkit.metrics.lexical import knowledge_precision
from faithkit.metrics.pmi_faith import PMIFaith


def rated_responses(task: str, key: dict, annotations) -> tuple[list[dict], np.ndarray]:
    """Every rated response's record (document, history, response; read from the systems' files the key names)
    and its faithfulness ratings (annotator x response, the page's answer index: 0 agree … 2 disagree)."""
    column = list(DIMENSIONS).index("faithfulness")

    def source(side: str) -> Path:  # as given to build: relative to where it ran, usually the task's parent
        path = Path(key["systems"][side]["source"])
        return path if path.exists() else Path(task).parent / path

    systems = {side: System.from_file(source(side)) for side in SYSTEMS}
    responses, ratings = [], []
    for index, entry in enumerate(key["items"]):
        for number, side in enumerate(SYSTEMS):
            responses.append(systems[side].records[entry["row"]])
            ratings.append(annotations.ratings[:, index, number, column])
    return responses, np.array(ratings).T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("answers", nargs="+")
    parser.add_argument("--adapter", help="checker adapter folder (default: the one faithkit ships)")
    args = parser.parse_args()
    key = read_key(args.task)
    annotations = read_annotations(key, args.answers)
    responses, ratings = rated_responses(args.task, key, annotations)
    documents = [r["document"] for r in responses]
    histories = [r["history"] for r in responses]
    texts = [r["response"] for r in responses]
    checked = ClaimChecker("faithkit-checker", nli_model=args.adapter).compute_rows(documents, histories, texts)
    pmi = PMIFaith(model="smollm2-135m").compute_rows(documents, histories, texts)
    scores = {
        "checker_faithful": np.array([row["faithkit_checker"] for row in checked]),
        "checker_supported": np.array([row["faithkit_checker_supported"] for row in checked]),
        "checker_not_unsupported": np.array([1 - row["faithkit_checker_hallucination"] for row in checked]),
        "pmi_faith": np.array([row["pmi"] for row in pmi]),
        "knowledge_precision": np.array([knowledge_precision(d, r) or 0.0 for d, r in zip(documents, texts)]),
    }
    levels = 2 - ratings  # Agree 2, Neutral 1, Disagree 0
    faithful = levels.mean(axis=0)
    figures: dict = {"responses": len(texts), "raters": int(ratings.shape[0])}
    for name, labels in (
        ("not_disagree", (levels > 0).all(axis=0).astype(int)),  # 1: no rater found an unsupported claim
        ("all_agree", (levels == 2).all(axis=0).astype(int)),
    ):
        if labels.min() == labels.max():
            continue
        results, _ = group_table(name, scores, labels)
        figures[name] = {"positives": int(labels.sum()), "results": results}
    figures["spearman"] = {}
    for measure, values in scores.items():
        rho = stats.spearman(values, faithful)
        figures["spearman"][measure] = {"rho": rho, "ci": stats.correlation_interval(rho, len(values))}
    for name in ("not_disagree", "all_agree"):
        for result in figures.get(name, {}).get("results", []):
            print(name, json.dumps(result, default=float))
    print(
        json.dumps(
            figures, default=lambda value: None if isinstance(value, float) and math.isnan(value) else float(value)
        )
    )


if __name__ == "__main__":
    main()
