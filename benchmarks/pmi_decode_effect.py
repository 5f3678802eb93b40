"""Does PMI-DECODE make SmolLM2's responses more faithful, and what does it cost in relevance?

100 Q² WoW contexts (the first 50 rows of dodeca_consistent.csv and of
dodeca_inconsistent.csv), SmolLM2-135M-Instruct zero-shot with its chat template (the
document in the system turn), greedy decoding vs PMI-DECODE at (alpha, top_p) = (0.25, 0.6)
and (0.5, 0.6). Faithfulness: PMI-FAITH judged by a model of another family (gemma3-270m)
and knowledge precision (share of the response's content words found in the document).
Relevance: sacrebleu BLEU and token F1 against the gold response.

Generations are appended to a JSONL file as they finish, so an interrupted run resumes.
The last line printed is one JSON object with every number.

    python benchmarks/pmi_decode_effect.py --out /tmp/faithkit_bench/pmi_decode_effect.jsonl
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from faithkit.serving import models
from faithkit.data import ResultWriter, data_root, read_results
from faithkit.decoding import PMIDecode, build_inputs, decode_responses
from faithkit.prompts import CHAT_TEMPLATE

DATA = data_root() / "q2_wow"
SETTINGS = {"greedy": None, "pmi_0.25_0.6": (0.25, 0.6), "pmi_0.5_0.6": (0.5, 0.6)}


def load_contexts(folder: Path, per_file: int) -> list[dict]:
    contexts = []
    for name in ("dodeca_consistent.csv", "dodeca_inconsistent.csv"):
        with open(folder / name, newline="", encoding="utf-8") as handle:
            for i, record in enumerate(csv.DictReader(handle)):
                if i == per_file:
                    break
                contexts.append(
                    {
                        "id": f"{name.split('_')[1].split('.')[0]}-{i}",
                        "document": record["knowledge"],
                        "history": [record["message"]],
                        "gold": record["gold"],
                    }
                )
    return contexts


@torch.no_grad()
def run_batch(model, tokenizer, batch: list[dict], setting, max_new_tokens: int) -> list[str]:
    inputs = build_inputs(
        model, tokenizer, [c["document"] for c in batch], [c["history"] for c in batch], CHAT_TEMPLATE
    )
    if setting is None:  # plain greedy: the conditioned half alone
        half = len(batch)
        mask = inputs["attention_mask"][:half]
        start = int((mask.sum(0) > 0).nonzero()[0])
        ids, mask = inputs["input_ids"][:half, start:], mask[:, start:]
        outputs = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id
        )
        return [t.strip() for t in tokenizer.batch_decode(outputs[:, ids.shape[1] :], skip_special_tokens=True)]
    alpha, top_p = setting
    outputs = model.generate(
        **inputs,
        max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        logits_processor=[PMIDecode(alpha=alpha, top_p=top_p)],
    )
    return decode_responses(model, tokenizer, outputs, inputs)


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--per-file", type=int, default=50)
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--scoring-model", default="gemma3-270m")
    parser.add_argument("--out", default="/tmp/faithkit_bench/pmi_decode_effect.jsonl")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--examples", type=int, default=4, help="side-by-side examples to print")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    contexts = load_contexts(Path(args.data), args.per_file)
    model, tokenizer = models.load("smollm2-135m")
    with ResultWriter(args.out) as writer:
        for setting, params in SETTINGS.items():
            todo = [c for c in contexts if not writer.done(f"{setting}:{c['id']}")]
            started = time.perf_counter()
            for start in range(0, len(todo), args.batch_size):
                batch = todo[start : start + args.batch_size]
                for context, response in zip(batch, run_batch(model, tokenizer, batch, params, args.max_new_tokens)):
                    writer.write({"id": f"{setting}:{context['id']}", "setting": setting, "response": response})
                print(
                    f"{setting}: {start + len(batch)}/{len(todo)} in {time.perf_counter() - started:.0f}s",
                    file=sys.stderr,
                    flush=True,
                )
    responses = {(r["setting"], r["id"].split(":", 1)[1]): r["response"] for r in read_results(args.out)}

    from faithkit.metrics import PMIFaith
    from faithkit.metrics.lexical import Lexical

    judge = PMIFaith(model=args.scoring_model, unconditional=False)
    summary = {}
    for setting in SETTINGS:
        texts = [responses[(setting, c["id"])] for c in contexts]
        scored = [i for i, text in enumerate(texts) if text.strip()]
        pmi = judge.compute(
            documents=[contexts[i]["document"] for i in scored],
            histories=[contexts[i]["history"] for i in scored],
            responses=[texts[i] for i in scored],
        )["pmi"]
        lexical = Lexical().compute(
            documents=[c["document"] for c in contexts], responses=texts, references=[c["gold"] for c in contexts]
        )
        precision = lexical["knowledge_precision"]
        summary[setting] = {
            "pmi_faith": mean(pmi),
            "knowledge_precision": lexical["mean_knowledge_precision"],
            "bleu": lexical["corpus_bleu"],
            "token_f1": lexical["mean_token_f1"],
            "mean_words": mean([len(t.split()) for t in texts]),
            "empty": len(texts) - len(scored),
            "no_content_words": sum(p is None for p in precision),
        }

    header = f"{'setting':<14} {'PMI-FAITH':>10} {'know.prec':>10} {'BLEU':>7} {'tokF1':>7} {'words':>6} {'empty':>6}"
    print(header)
    for setting, row in summary.items():
        print(
            f"{setting:<14} {row['pmi_faith']:>10.3f} {row['knowledge_precision']:>10.3f} {row['bleu']:>7.2f} "
            f"{row['token_f1']:>7.3f} {row['mean_words']:>6.1f} {row['empty']:>6d}"
        )
    for c in contexts[:: max(1, len(contexts) // args.examples)][: args.examples]:
        print(f"\n[{c['id']}] document: {c['document']}\n  user: {c['history'][0]}\n  gold: {c['gold']}")
        for setting in SETTINGS:
            print(f"  {setting:<13} {responses[(setting, c['id'])]}")
    base = summary["greedy"]
    measures = ("pmi_faith", "knowledge_precision", "bleu", "token_f1")
    summary["delta_0.25_0.6"] = {k: summary["pmi_0.25_0.6"][k] - base[k] for k in measures}
    summary["contexts"] = len(contexts)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
