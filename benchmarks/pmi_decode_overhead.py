"""What does PMI-DECODE cost over plain decoding, and what does batching both views in one pass save?

SmolLM2-135M-Instruct (chat template, document in the system turn), 32 BEGIN WoW dev
contexts, exactly 40 new tokens, greedy and 4-beam search, 8 contexts per batch for every
variant:

* ``plain``        — ``generate`` on the B conditioned views, as transformers runs it (its prefill
  pads every prompt to the batch width and, for beam search, runs once per beam);
* ``plain_cached`` — the same with the prompts prefilled once, unpadded (:func:`prompt_cache`);
* ``pmi``          — PMIDecode as :func:`faithkit.decoding.generate` runs it: 2B rows (conditioned +
  history-only) in one forward per step, prompts prefilled once per context without padding;
* ``two_pass``     — the unbatched baseline: ``generate`` on the B conditioned views (prefilled like
  ``plain_cached``) and a second model call per step for the history-only views with their own
  cache (the way transformers' ``UnbatchedClassifierFreeGuidanceLogitsProcessor`` works, plus
  cache reordering for beams).

The variants run interleaved batch by batch so load from other processes hits them alike.
The last line printed is one JSON object; each ratio is a time divided by plain decoding's.

    python benchmarks/pmi_decode_overhead.py --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import LogitsProcessor

from faithkit.serving import models
from faithkit.data import data_root, read_rows
from faithkit.decoding import PMIDecode, build_inputs
from faithkit.decoding.prefill import prompt_cache
from faithkit.prompts import CHAT_TEMPLATE

DATA = data_root() / "begin" / "begin_dev_wow.tsv"


class TwoPassPMI(LogitsProcessor):
    """Baseline PMI-DECODE: the history-only views get their own model call (and cache) at every step."""

    def __init__(self, model, history_inputs: dict, num_beams: int, alpha: float, top_p: float):
        self.model = model
        self.num_beams = num_beams
        self.input_ids, self.mask = history_inputs["input_ids"], history_inputs["attention_mask"]
        self.cache = None
        self.previous = None
        self.pmi = PMIDecode(alpha, top_p)

    @torch.no_grad()
    def __call__(self, input_ids, scores):
        if self.cache is None:  # the history-only prompts, once per context, then copied per beam
            positions = (self.mask.cumsum(-1) - 1).clamp(min=0)
            output = self.model(
                input_ids=self.input_ids,
                attention_mask=self.mask,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
            )
            self.cache = output.cache
            self.cache.batch_repeat_interleave(self.num_beams)
            self.mask = self.mask.repeat_interleave(self.num_beams, dim=0)
            self.previous = input_ids
            return self.pmi.combine(scores, output.logits[:, -1].float().repeat_interleave(self.num_beams, dim=0))
        else:
            parents = self._parents(input_ids)  # beam search reorders rows between steps
            self.cache.reorder_cache(parents)
            self.mask = torch.cat([self.mask[parents], self.mask.new_ones(len(parents), 1)], dim=1)
            ids, positions = input_ids[:, -1:], self.mask.sum(-1, keepdim=True) - 1
        output = self.model(
            input_ids=ids,
            attention_mask=self.mask,
            position_ids=positions,
            cache=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.cache = output.cache
        self.previous = input_ids
        return self.pmi.combine(scores, output.logits[:, -1].float())

    def _parents(self, input_ids):
        same = (input_ids[:, None, :-1] == self.previous[None, :, :]).all(dim=-1)
        return same.int().argmax(dim=1)


def load_contexts(path: Path, n: int) -> list[tuple[str, list[str]]]:
    return [(row.document, row.history) for row in read_rows(path) if not row.error][:n]


def half(inputs: dict, second: bool = False) -> dict:
    """The conditioned (or history-only) rows without the padding columns only the other half needed."""
    rows = inputs["input_ids"].shape[0] // 2
    block = slice(rows, None) if second else slice(None, rows)
    mask = inputs["attention_mask"][block]
    start = int((mask.sum(0) > 0).nonzero()[0])
    return {"input_ids": inputs["input_ids"][block, start:], "attention_mask": mask[:, start:]}


@torch.no_grad()
def run(variant: str, model, inputs: dict, num_beams: int, new_tokens: int, alpha: float, top_p: float):
    kwargs = {
        "num_beams": num_beams,
        "max_new_tokens": new_tokens,
        "min_new_tokens": new_tokens,
        "pad_token_id": model.generation_config.pad_token_id,
    }
    started = time.perf_counter()
    if variant == "pmi":
        cache = prompt_cache(model, inputs, copies=num_beams)
        tokens = model.generate(**inputs, cache=cache, logits_processor=[PMIDecode(alpha, top_p)], **kwargs)
        tokens = tokens[: inputs["input_ids"].shape[0] // 2, inputs["input_ids"].shape[1] :]
    else:
        plain = half(inputs)
        if variant == "two_pass":
            kwargs["logits_processor"] = [TwoPassPMI(model, half(inputs, second=True), num_beams, alpha, top_p)]
        if variant != "plain":
            kwargs["cache"] = prompt_cache(model, plain, copies=num_beams, groups=1)
        tokens = model.generate(**plain, **kwargs)[:, plain["input_ids"].shape[1] :]
    return time.perf_counter() - started, tokens


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--contexts", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=40)
    parser.add_argument("--beams", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.25)
    parser.add_argument("--top-p", type=float, default=0.6)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--modes", nargs="+", default=["greedy", "beam"], choices=["greedy", "beam"])
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    model, tokenizer = models.load("smollm2-135m")
    contexts = load_contexts(Path(args.data), args.contexts)
    batches = [contexts[i : i + args.batch_size] for i in range(0, len(contexts), args.batch_size)]
    modes = {mode: beams for mode, beams in (("greedy", 1), ("beam", args.beams)) if mode in args.modes}
    variants = ("plain", "plain_cached", "pmi", "two_pass")
    seconds = {(mode, variant): 0.0 for mode in modes for variant in variants}
    agree = {mode: [0, 0] for mode in modes}

    warm = build_inputs(model, tokenizer, [contexts[0][0]], [contexts[0][1]], CHAT_TEMPLATE)
    for variant in variants:
        run(variant, model, warm, 1, 2, args.alpha, args.top_p)
    for number, batch in enumerate(batches, start=1):
        inputs = build_inputs(model, tokenizer, [d for d, _ in batch], [h for _, h in batch], CHAT_TEMPLATE)
        for mode, beams in modes.items():
            tokens = {}
            shift = number % len(variants)  # rotate the order: fair under drifting load
            for variant in variants[shift:] + variants[:shift]:
                elapsed, tokens[variant] = run(variant, model, inputs, beams, args.new_tokens, args.alpha, args.top_p)
                seconds[(mode, variant)] += elapsed
            agree[mode][0] += int((tokens["pmi"] == tokens["two_pass"]).all(dim=-1).sum())
            agree[mode][1] += tokens["pmi"].shape[0]
        print(
            f"batch {number}/{len(batches)}: " + ", ".join(f"{m}/{v} {s:.1f}s" for (m, v), s in seconds.items()),
            file=sys.stderr,
            flush=True,
        )

    print(
        f"{len(contexts)} contexts, {args.new_tokens} new tokens, batches of {args.batch_size} contexts, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(
        f"{'mode':<8} {'plain':>8} {'plain_cached':>13} {'pmi':>8} {'two_pass':>9} {'pmi/plain':>10} "
        f"{'pmi/cached':>11} {'2pass/plain':>12} {'pmi=2pass':>10}"
    )
    for mode in modes:
        plain, cached, pmi, two = (seconds[(mode, v)] for v in variants)
        print(
            f"{mode:<8} {plain:>7.1f}s {cached:>12.1f}s {pmi:>7.1f}s {two:>8.1f}s {pmi / plain:>10.2f} "
            f"{pmi / cached:>11.2f} {two / plain:>12.2f} {agree[mode][0]:>5}/{agree[mode][1]}"
        )
    result = {}
    for mode in modes:
        plain, cached, pmi, two = (seconds[(mode, v)] for v in variants)
        result.update(
            {
                f"overhead_{mode}": pmi / plain,
                f"two_pass_{mode}": two / plain,
                f"overhead_{mode}_vs_plain_cached": pmi / cached,
                f"two_pass_{mode}_vs_plain_cached": two / cached,
            }
        )
    result.update(
        {
            "seconds": {f"{m}_{v}": round(s, 2) for (m, v), s in seconds.items()},
            "pmi_equals_two_pass": {m: f"{a}/{n}" for m, (a, n) in agree.items()},
            "contexts": len(contexts),
            "new_tokens": args.new_tokens,
            "batch_size": args.batch_size,
            "beams": args.beams,
            "threads": torch.get_num_threads(),
        }
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
