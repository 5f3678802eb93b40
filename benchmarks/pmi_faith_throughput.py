"""PMI-FAITH throughput: faithkit's batched, prefix-sharing scorer vs the authors' way, side by side.

The authors' code scores one example at a time with one unpadded forward pass per view
(log P(r|d,h), then log P(r|h)). Both sides here compute exactly those two views with the
same model, template and tokens, and the script checks they agree before reporting speed.

Workloads: (a) BEGIN CMU-DoG dev (documents repeat across rows); (b) an α/p-sweep shape:
40 BEGIN WoW dev contexts × 8 candidate responses (the row's own and 7 borrowed from others);
(c) a real α/p sweep: the same 40 contexts × the 8 responses SmolLM2 gives them under
PMI-DECODE at alpha ∈ {0, 0.25, 0.5, 0.75} × top_p ∈ {0.6, 0.9} (40 new tokens), generated
once (a few minutes) and kept in faithkit's cache folder. Candidates of one context often
start alike or coincide, which (b)'s borrowed responses never do.

Both sides' arithmetic is counted too (:class:`model_work.ModelWork`): ``work_ratio`` is the
authors' multiply-accumulates over faithkit's. As the model is compute bound, it is about
the speed-up that computing less buys; exact scores need every response token run once
per view, so no exact method can go far beyond the work ratio of an optimal schedule.

    python benchmarks/pmi_faith_throughput.py [--model smollm2-135m] [--limit N]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from faithkit.serving import models
from faithkit.data import ResultWriter, data_root, read_results, read_rows
from faithkit.decoding import PMI, generate
from faithkit.metrics import PMIFaith
from faithkit.serving.scoring import reference_token_logprobs
from model_work import ModelWork

DATA = data_root() / "begin"


def authors_way(metric: PMIFaith, documents, histories, responses) -> list[float]:
    """One example at a time, one unpadded pass per view, token-mean log-probabilities."""
    scores = []
    for document, history, response in zip(documents, histories, responses):
        target = metric.template.response_ids(metric.tokenizer, response)
        views = [metric.template.context(metric.tokenizer, d, history).ids for d in (document, None)]
        conditioned, history_only = (reference_token_logprobs(metric.model, ids, target).mean() for ids in views)
        scores.append(float(conditioned - history_only))
    return scores


def sweep_workload(rows, contexts: int = 40, responses_per_context: int = 8):
    documents, histories, responses = [], [], []
    for i, row in enumerate(rows[:contexts]):
        for j in range(responses_per_context):
            documents.append(row.document)
            histories.append(row.history)
            responses.append(rows[(i + 37 * j) % len(rows)].response)  # own response first, then borrowed ones
    return documents, histories, responses


SWEEP_GRID = [(alpha, top_p) for alpha in (0.0, 0.25, 0.5, 0.75) for top_p in (0.6, 0.9)]


def decoded_sweep_workload(metric: PMIFaith, model_name: str, rows, contexts: int = 40, max_new_tokens: int = 40):
    """The responses of a real α/p sweep over the first ``contexts`` rows (generated once, then read back)."""
    rows = rows[:contexts]
    name = model_name.replace("/", "--")
    path = models.cache_dir() / "benchmarks" / f"pmi_decode_sweep_{name}_{contexts}x{len(SWEEP_GRID)}.jsonl"
    with ResultWriter(path) as writer:
        for alpha, top_p in SWEEP_GRID:
            if writer.done(f"0-{alpha}-{top_p}"):
                continue
            print(f"generating the sweep's responses at alpha={alpha}, top_p={top_p}", file=sys.stderr, flush=True)
            responses = generate(
                metric.model,
                metric.tokenizer,
                [r.document for r in rows],
                [r.history for r in rows],
                PMI(alpha, top_p),
                max_new_tokens=max_new_tokens,
            )
            for i, response in enumerate(responses):
                # an empty response (the model ended its turn at once) cannot be scored: "..." stands in
                writer.write({"id": f"{i}-{alpha}-{top_p}", "response": response.strip() or "..."})
    response_of = {record["id"]: record["response"] for record in read_results(path)}
    documents, histories, responses = [], [], []
    for i, row in enumerate(rows):
        for alpha, top_p in SWEEP_GRID:
            documents.append(row.document)
            histories.append(row.history)
            responses.append(response_of[f"{i}-{alpha}-{top_p}"])
    return documents, histories, responses


def measure(name: str, metric: PMIFaith, documents, histories, responses) -> dict:
    with ModelWork(metric.model) as fast_work:
        start = time.perf_counter()
        fast = metric.compute(documents=documents, histories=histories, responses=responses)["pmi"]
        fast_seconds = time.perf_counter() - start
    with ModelWork(metric.model) as slow_work:
        start = time.perf_counter()
        slow = authors_way(metric, documents, histories, responses)
        slow_seconds = time.perf_counter() - start
    difference = max(abs(a - b) for a, b in zip(fast, slow))
    rows = len(responses)
    result = {
        f"rows_{name}": rows,
        f"faithkit_rows_per_s_{name}": rows / fast_seconds,
        f"authors_rows_per_s_{name}": rows / slow_seconds,
        f"speedup_{name}": slow_seconds / fast_seconds,
        f"max_abs_diff_{name}": difference,
        f"work_ratio_{name}": slow_work.macs / fast_work.macs,
        f"tokens_faithkit_{name}": fast_work.tokens,
        f"tokens_authors_{name}": slow_work.tokens,
    }
    print(
        f"{name}: {rows} rows | faithkit {rows / fast_seconds:.2f} rows/s | authors' way "
        f"{rows / slow_seconds:.2f} rows/s | speedup {slow_seconds / fast_seconds:.2f}x | "
        f"work ratio {slow_work.macs / fast_work.macs:.2f}x ({slow_work.tokens} vs {fast_work.tokens} tokens) | "
        f"max |Δpmi| {difference:.2e}",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--limit", type=int, help="score only the first N CMU rows (a quick run)")
    args = parser.parse_args()

    metric = PMIFaith(model=args.model, batch_size=args.batch_size, unconditional=False)
    with torch.inference_mode():
        metric.compute(documents=["warm up"], histories=["hi"], responses=["ok"])
    cmu = [r for r in read_rows(DATA / "begin_dev_cmu.tsv") if not r.error][: args.limit]
    wow = [r for r in read_rows(DATA / "begin_dev_wow.tsv") if not r.error]
    figures = {"model": args.model, "threads": torch.get_num_threads()}
    figures |= measure("cmu", metric, [r.document for r in cmu], [r.history for r in cmu], [r.response for r in cmu])
    figures |= measure("sweep", metric, *sweep_workload(wow))
    figures |= measure("sweep_decoded", metric, *decoded_sweep_workload(metric, args.model, wow))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
