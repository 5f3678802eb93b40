"""Offline Q² per item (the reference code's order) against Q² batched, on the same responses, in one run.

Per item means what the reference pipeline does: for each response, for each span, one
QG call, one QA call on the response per question tried, one on the knowledge, one NLI
call, and one end-to-end NLI call per response without a question. Batched is
``Q2.compute`` on all responses at once: one call per stage and batch. Both use the same
loaded models, so the difference is the batching and the prefix sharing it allows. The
scores must agree; the last line printed is one JSON object. ``work_ratio`` is the LM's
multiply-accumulates per item over batched (:class:`model_work.ModelWork`): on a compute-bound
CPU, about what batching can buy when every candidate answer must still be scored.

    python benchmarks/q2_throughput.py --responses 60
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from faithkit.data.corpora.q2_wow import load_q2_wow
from faithkit.metrics.q2.metric import FALLBACK_SCORES, Q2, extract_spans, is_personal, needs_nli, question_score
from faithkit.metrics.lexical import normalize_answer, token_f1
from faithkit.metrics.q2.stages import NO_ANSWER, Candidate
from faithkit.data import data_root
from model_work import ModelWork

DATA = data_root() / "q2_wow"


def per_item(metric: Q2, knowledge: list[str], responses: list[str]) -> list[float]:
    """Q² one span and one model call at a time, in the reference code's loop order."""
    scores = []
    for passage, response in zip(knowledge, responses):
        question_scores = []
        for span in extract_spans(metric.nlp(response)):
            [beams] = metric.qg.generate([Candidate(span.text, response, span.spacy_span)])
            for question in (q.strip() for q in beams):
                if not question or is_personal(metric.nlp(question)):
                    continue
                [answer] = metric.qa.answer([question], [response])
                if answer == NO_ANSWER or normalize_answer(answer) != normalize_answer(span.text):
                    continue
                [knowledge_answer] = metric.qa.answer([question], [passage])
                f1 = token_f1(span.text, knowledge_answer)
                label = None
                if getattr(metric.nli, "compare_answers", True) and needs_nli(f1, knowledge_answer):
                    [label] = metric.nli.predict([f"{question} {knowledge_answer}."], [f"{question} {span.text}."])
                question_scores.append(question_score(f1, label))
                break  # the first valid question of a span
        if question_scores:
            scores.append(sum(question_scores) / len(question_scores))
        else:
            [label] = metric.nli.predict([passage], [response])
            scores.append(FALLBACK_SCORES[label])
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--responses", type=int, default=60, help="half from each dodeca file")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [
        row
        for name in ("consistent", "inconsistent")
        for row in load_q2_wow(DATA / f"dodeca_{name}.csv", name, limit=args.responses // 2)
    ]
    knowledge, responses = [r.document for r in rows], [r.response for r in rows]
    metric = Q2(preset="offline", batch_size=args.batch_size)
    metric.compute(knowledge=knowledge[:2], responses=responses[:2])  # warm-up: lazy inits, calibration

    lm = metric.qa.lm.model  # the offline preset's QA and NLI share this LM
    with ModelWork(lm) as batched_work:
        start = time.perf_counter()
        batched = metric.compute(knowledge=knowledge, responses=responses)["q2"]
        batched_seconds = time.perf_counter() - start
    print(
        f"batched:  {len(rows)} responses in {batched_seconds:.1f}s ({len(rows) / batched_seconds:.2f} responses/s)",
        flush=True,
    )

    with ModelWork(lm) as single_work:
        start = time.perf_counter()
        single = per_item(metric, knowledge, responses)
        single_seconds = time.perf_counter() - start
    print(
        f"per item: {len(rows)} responses in {single_seconds:.1f}s ({len(rows) / single_seconds:.2f} responses/s)",
        flush=True,
    )

    differences = [abs(a - b) for a, b in zip(batched, single)]
    result = {
        "speedup": round(single_seconds / batched_seconds, 2),
        "work_ratio": round(single_work.macs / batched_work.macs, 2),
        "tokens_per_item": single_work.tokens,
        "tokens_batched": batched_work.tokens,
        "responses": len(rows),
        "batched_seconds": round(batched_seconds, 1),
        "per_item_seconds": round(single_seconds, 1),
        "max_score_difference": max(differences),
        "responses_with_different_scores": sum(d > 1e-6 for d in differences),
        "threads": args.threads,
        "batch_size": args.batch_size,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
