"""Measure Q²'s offline backends stage by stage on the Q² WoW dodeca files, and the chosen preset end to end.

Stage mode (default) compares question generators × answerers on the response side,
which is where the offline models lose questions: for each combination, the share of
spans that end with a valid question, the answer agreement (share of non-personal
questions whose answer on the response is the span), question coverage (responses with
at least one valid question) and the time each stage took.

``--quality`` runs the full metric with ``Q2(preset="offline")`` (or the backends given)
on both files and reports mean q2 per set, accuracy at 0.5, AUROC and coverage, for
``q2`` and ``q2_no_nli``. The last line printed is one JSON object.

    python benchmarks/q2_offline_stages.py --rows 30 --qg rules fewshot:smollm2-135m fewshot:gemma3-270m \
        --qa scoring:smollm2-135m
    python benchmarks/q2_offline_stages.py --quality --rows 150
    python benchmarks/q2_offline_stages.py --quality --rows 150 --nli labels:smollm2-135m
    python benchmarks/q2_offline_stages.py --quality --rows 150 --checker-on-answers

The preset's NLI is faithkit's claim checker (``checker``) on the end-to-end fallback only; ``--nli
labels:smollm2-135m`` measures the label-word NLI it replaced, ``--checker-on-answers`` the checker on the
answer pairs too.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import torch

from faithkit.stats import auroc
from faithkit.metrics.lexical import normalize_answer
from faithkit.metrics.q2.metric import Q2, extract_spans, is_personal
from faithkit.metrics.q2.stages import Candidate
from faithkit.metrics.q2.offline import CheckerNLI
from faithkit.data import data_root

DATA = data_root() / "q2_wow"


def read_set(name: str, rows: int) -> list[dict]:
    with open(DATA / f"dodeca_{name}.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))[:rows]


def stages(args) -> dict:
    rows = read_set("consistent", args.rows) + read_set("inconsistent", args.rows)
    responses = [row["response"] for row in rows]
    metric = Q2(qg_model="rules", qa_model=args.qa[0], nli_model=args.nli, preset="offline", batch_size=args.batch_size)
    spans = [extract_spans(doc) for doc in metric.nlp.pipe(responses)]
    flat = [(r, s) for r, response_spans in enumerate(spans) for s in response_spans]
    candidates = [Candidate(s.text, responses[r], s.spacy_span) for r, s in flat]
    print(f"{len(responses)} responses, {len(flat)} spans", flush=True)
    results = []
    for qg_spec in args.qg:
        qg = metric.qg if qg_spec == "rules" else _backend(metric, "qg", qg_spec)
        start = time.perf_counter()
        questions = [q[0] if q else "" for q in qg.generate(candidates)]
        qg_seconds = time.perf_counter() - start
        personal = [is_personal(doc) for doc in metric.nlp.pipe(questions)]
        asked = [i for i, q in enumerate(questions) if q and not personal[i]]
        for qa_spec in args.qa:
            qa = _backend(metric, "qa", qa_spec)
            start = time.perf_counter()
            answers = qa.answer([questions[i] for i in asked], [candidates[i].context for i in asked])
            qa_seconds = time.perf_counter() - start
            valid = [
                i for i, a in zip(asked, answers) if a and normalize_answer(a) == normalize_answer(candidates[i].text)
            ]
            result = {
                "qg": qg_spec,
                "qa": qa_spec,
                "spans": len(flat),
                "asked": len(asked),
                "valid_share": round(len(valid) / len(flat), 3),
                "answer_agreement": round(len(valid) / max(len(asked), 1), 3),
                "coverage": round(len({flat[i][0] for i in valid}) / len(responses), 3),
                "qg_seconds": round(qg_seconds, 1),
                "qa_seconds": round(qa_seconds, 1),
                "examples": [(candidates[i].text, questions[i]) for i in asked[:3]],
            }
            print(json.dumps(result), flush=True)
            results.append(result)
    return {"mode": "stages", "rows_per_set": args.rows, "results": results}


_cache: dict = {}


def _backend(metric: Q2, stage: str, spec: str):
    """Build (once) a backend that shares the metric's spaCy model and loaded LMs."""
    from faithkit.metrics.q2.backends import build_backend

    if (stage, spec) not in _cache:
        _cache[stage, spec] = build_backend(
            stage, spec, batch_size=metric.batch_size, nlp=metric.nlp, load_lm=metric._load_lm
        )
    return _cache[stage, spec]


def quality(args) -> dict:
    nli = CheckerNLI(batch_size=args.batch_size, compare_answers=True) if args.checker_on_answers else args.nli
    metric = Q2(
        qg_model=args.qg[0] if args.qg else None,
        qa_model=args.qa[0] if args.qa else None,
        nli_model=nli,
        preset="offline",
        batch_size=args.batch_size,
    )
    report: dict = {
        "mode": "quality",
        "rows_per_set": args.rows,
        "backends": {"qg": type(metric.qg).__name__, "qa": type(metric.qa).__name__, "nli": type(metric.nli).__name__},
        "nli_on_answers": getattr(metric.nli, "compare_answers", True),
    }
    scores = {}
    for name in ("consistent", "inconsistent"):
        rows = read_set(name, args.rows)
        start = time.perf_counter()
        result = metric.compute(knowledge=[r["knowledge"] for r in rows], responses=[r["response"] for r in rows])
        scores[name] = result
        report[name] = {
            "mean_q2": round(result["mean_q2"], 4),
            "mean_q2_no_nli": round(result["mean_q2_no_nli"], 4),
            "coverage": round(result["coverage"], 3),
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(name, json.dumps(report[name]), flush=True)
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            with open(Path(args.save) / f"{name}.jsonl", "w", encoding="utf-8") as handle:
                handle.writelines(
                    json.dumps(
                        {
                            "response": row["response"],
                            "knowledge": row["knowledge"],
                            **{k: result[k][i] for k in ("q2", "q2_no_nli", "fallback", "explanations")},
                        }
                    )
                    + "\n"
                    for i, row in enumerate(rows)
                )
    for key in ("q2", "q2_no_nli"):
        positives, negatives = scores["consistent"][key], scores["inconsistent"][key]
        correct = sum(s >= 0.5 for s in positives) + sum(s < 0.5 for s in negatives)
        report[key] = {
            "accuracy_at_0.5": round(correct / (len(positives) + len(negatives)), 4),
            "auroc": round(auroc(positives + negatives, [1] * len(positives) + [0] * len(negatives)), 4),
        }
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30, help="rows from each file (each has 150)")
    parser.add_argument("--qg", nargs="*", default=["rules", "fewshot:smollm2-135m", "fewshot:gemma3-270m"])
    parser.add_argument("--qa", nargs="*", default=["scoring:smollm2-135m"])
    parser.add_argument("--nli", default=None, help="NLI backend spec (default: the offline preset's)")
    parser.add_argument(
        "--checker-on-answers", action="store_true", help="the claim checker as NLI on answer pairs too"
    )
    parser.add_argument(
        "--quality", action="store_true", help="run the full metric and report quality instead of stages"
    )
    parser.add_argument("--save", help="with --quality: folder to write per-response results to")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.quality:
        args.qg = args.qg if args.qg != parser.get_default("qg") else []
        args.qa = args.qa if args.qa != parser.get_default("qa") else []
    report = quality(args) if args.quality else stages(args)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
