"""The GPU check: faithkit's two-view decoding and its scorer on one CUDA GPU, in bf16, in at most 8 minutes.

Random-initialised models of real shapes, built from configs (no download): BART-Large and a
1B Llama-architecture model (Llama 3.2 1B's shape). For each, plain greedy and 4-beam search
against PMI-DECODE, CAD and AdaCAD at their defaults, at batch sizes 1, 8, 32 and 128, every
decode exactly ``--new-tokens`` long (``min_new_tokens = max_new_tokens``), as tokens/s and
the ratio to plain decoding under the same search. Two checks: greedy PMI-DECODE gives the
same tokens in bf16 as in fp32 on a small case (a model with peaked next-token
distributions, so that a flipped token would be a bug, not a near-tie of random weights), and
PMI-FAITH's prefix-sharing scorer (:class:`faithkit.serving.scoring.TokenScorer`) against the
one-at-a-time loop (:func:`faithkit.serving.scoring.reference_token_logprobs`) at batch 64: seconds
and the largest difference. A decode that does not fit in memory, or that would start after
``--budget`` seconds, is reported as such instead of stopping the check.

Needs torch, transformers, accelerate and faithkit (docs/gpu_check.md lists the wheels). The
last line printed is one JSON object; the exit status is 1 when a check failed.

    python benchmarks/gpu_check.py                       # one CUDA GPU, bf16
    python benchmarks/gpu_check.py --device cpu --tiny   # the same code on tiny shapes, in seconds
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    LlamaConfig,
    LlamaForCausalLM,
)

from faithkit.decoding import PMIDecode
from faithkit.decoding.two_view.strategies import CAD, PMI, AdaCAD
from faithkit.decoding.base import Plain
from faithkit.serving.scoring import TokenScorer, reference_token_logprobs

SHAPES = {  # name: (config class, model class, real shape, tiny shape)
    "bart-large": (
        BartConfig,
        BartForConditionalGeneration,
        dict(
            vocab_size=50265,
            d_model=1024,
            encoder_layers=12,
            decoder_layers=12,
            encoder_attention_heads=16,
            decoder_attention_heads=16,
            encoder_ffn_dim=4096,
            decoder_ffn_dim=4096,
            max_position_embeddings=1024,
        ),
        dict(
            vocab_size=512,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=256,
        ),
    ),
    "llama-1b": (
        LlamaConfig,
        LlamaForCausalLM,
        dict(
            vocab_size=128256,
            hidden_size=2048,
            intermediate_size=8192,
            num_hidden_layers=16,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=64,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
            rope_theta=500000.0,
        ),
        dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=256,
            tie_word_embeddings=False,
        ),
    ),
}
STRATEGIES = {"plain": Plain(), "pmi": PMI(), "cad": CAD(), "adacad": AdaCAD()}
SEARCHES = {"greedy": 1, "beam": 4}
BATCHES, TINY_BATCHES = (1, 8, 32, 128), (2,)
PAD, EOS = 1, 2  # the models' special tokens; min_new_tokens keeps EOS out of every decode


def build(name: str, tiny: bool, dtype: torch.dtype, device: str):
    """A random-initialised model of ``name``'s shape (seeded), in eval mode on ``device``."""
    config_class, model_class, real, small = SHAPES[name]
    torch.manual_seed(0)
    config = config_class(
        **(small if tiny else real), pad_token_id=PAD, bos_token_id=0, eos_token_id=EOS, decoder_start_token_id=EOS
    )
    with torch.device(device):
        model = model_class(config)
    return model.to(dtype).eval()


def two_view_inputs(model, batch: int, context: int, history: int, seed: int = 0) -> dict:
    """2B rows of random prompts: B conditioned views (``context`` tokens), then their history-only views (the
    last ``history`` tokens), left-padded for decoder-only models and right-padded for encoders."""
    generator = torch.Generator().manual_seed(seed)
    conditioned = torch.randint(3, model.config.vocab_size, (batch, context), generator=generator)
    rows = [row.tolist() for row in conditioned] + [row[-history:].tolist() for row in conditioned]
    ids = torch.full((2 * batch, context), PAD)
    mask = torch.zeros((2 * batch, context), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(0, len(row)) if model.config.is_encoder_decoder else slice(context - len(row), context)
        ids[i, span], mask[i, span] = torch.tensor(row), 1
    return {"input_ids": ids.to(model.device), "attention_mask": mask.to(model.device)}


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@torch.no_grad()
def decode(model, inputs: dict, strategy, beams: int, new_tokens: int) -> torch.Tensor:
    """One generate call of ``strategy`` (plain: the conditioned half alone)."""
    rows = inputs if strategy.views == 2 else {k: v[: v.shape[0] // 2] for k, v in inputs.items()}
    return model.generate(
        **rows,
        logits_processor=strategy.processors(),
        num_beams=beams,
        do_sample=False,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        pad_token_id=PAD,
        eos_token_id=EOS,
    )


def time_decodes(model, name: str, args, deadline: float) -> list[dict]:
    """tokens/s of every strategy x search x batch size, and each one's ratio to plain decoding's."""
    results = []
    for batch in TINY_BATCHES if args.tiny else BATCHES:
        inputs = two_view_inputs(model, batch, args.context_tokens, args.history_tokens)
        for search, beams in SEARCHES.items():
            plain = None
            warm = False
            for label, strategy in STRATEGIES.items():
                row = {"model": name, "search": search, "batch": batch, "strategy": label}
                if time.monotonic() > deadline:
                    results.append({**row, "skipped": "over the time budget"})
                    continue
                try:
                    if not warm:  # kernels and allocator for this shape: B rows (plain) and 2B rows (two views)
                        decode(model, inputs, Plain(), beams, 2)
                        decode(model, inputs, PMI(), beams, 2)
                        warm = True
                    synchronize(args.device)
                    started = time.perf_counter()
                    decode(model, inputs, strategy, beams, args.new_tokens)
                    synchronize(args.device)
                    seconds = time.perf_counter() - started
                except torch.OutOfMemoryError:
                    torch.cuda.empty_cache()
                    results.append({**row, "skipped": "out of memory"})
                    continue
                speed = batch * args.new_tokens / seconds
                plain = speed if label == "plain" else plain
                results.append(
                    {
                        **row,
                        "seconds": round(seconds, 4),
                        "tokens_per_s": round(speed, 1),
                        "ratio_to_plain": round(speed / plain, 3) if plain else None,
                    }
                )
    return results


def bf16_matches_fp32(args) -> dict:
    """Greedy PMI-DECODE on a small case (the tiny Llama, 4 contexts, 16 tokens), the same weights in bf16 and fp32.

    Random weights give flat next-token distributions, where bf16's rounding alone can swap two
    near-equal scores, and then the rest of the row differs. So besides the exact comparison,
    each row's first difference is checked to be such a tie: fp32's margin between the two
    tokens (its own choice and bf16's) at most twice bf16's error on their scores, at that step
    and prefix. A larger margin would be a bug in the bf16 path, not rounding.
    """
    built = {
        dtype: build("llama-1b", tiny=True, dtype=dtype, device=args.device)
        for dtype in (torch.float32, torch.bfloat16)
    }
    inputs = two_view_inputs(built[torch.float32], 4, 32, 8, seed=1)
    tokens = {dtype: decode(model, inputs, PMI(), 1, 16)[:4, 32:] for dtype, model in built.items()}
    same = tokens[torch.float32] == tokens[torch.bfloat16]
    differences = []
    for row in range(4):
        if bool(same[row].all()):
            continue
        step = int((~same[row]).nonzero()[0])
        prefix = tokens[torch.float32][row, :step]
        chosen = [int(tokens[torch.float32][row, step]), int(tokens[torch.bfloat16][row, step])]
        scores = {dtype: pmi_scores(model, inputs, row, prefix)[chosen] for dtype, model in built.items()}
        margin = float(scores[torch.float32][0] - scores[torch.float32][1])
        error = float((scores[torch.bfloat16] - scores[torch.float32]).abs().max())
        differences.append(
            {
                "row": row,
                "step": step,
                "fp32_margin": round(margin, 5),
                "bf16_error": round(error, 5),
                "rounding_tie": margin <= 2 * error,
            }
        )
    return {
        "same_tokens": bool(same.all()),
        "agreement": round(float(same.float().mean()), 4),
        "tokens": same.numel(),
        "first_differences": differences,
        "passed": all(difference["rounding_tie"] for difference in differences),
    }


@torch.no_grad()
def pmi_scores(model, inputs: dict, row: int, prefix: torch.Tensor) -> torch.Tensor:
    """PMI-DECODE's next-token scores (float32) for one context after ``prefix``: both views unpadded, one pass each."""
    batch = inputs["input_ids"].shape[0] // 2
    logits = []
    for index in (row, batch + row):
        ids = inputs["input_ids"][index][inputs["attention_mask"][index].bool()]
        ids = torch.cat([ids, prefix.to(ids.device)])[None]
        logits.append(model(input_ids=ids).logits[:, -1].float())
    return PMIDecode(PMI().alpha, PMI().top_p).combine(*logits)[0]


def scorer_against_loop(model, args) -> dict:
    """PMI-FAITH's requests for 64 responses (8 contexts x 8 responses, 2 views each): prefix-sharing scorer in
    one call against one full pass per request; seconds each and the largest difference of a log-probability."""
    generator = torch.Generator().manual_seed(2)
    vocabulary = model.config.vocab_size
    requests = []
    for _ in range(8):
        context = torch.randint(3, vocabulary, (args.context_tokens,), generator=generator).tolist()
        for _ in range(8):
            response = torch.randint(3, vocabulary, (args.new_tokens,), generator=generator).tolist()
            requests += [(context, response), (context[-args.history_tokens :], response)]
    synchronize(args.device)
    started = time.perf_counter()
    fast = TokenScorer(model, batch_size=64)(requests)
    synchronize(args.device)
    shared = time.perf_counter() - started
    started = time.perf_counter()
    slow = [reference_token_logprobs(model, context, target) for context, target in requests]
    synchronize(args.device)
    alone = time.perf_counter() - started
    difference = max(float((a.float() - b.float()).abs().max()) for a, b in zip(fast, slow))
    return {
        "responses": 64,
        "requests": len(requests),
        "scorer_seconds": round(shared, 3),
        "one_at_a_time_seconds": round(alone, 3),
        "speedup": round(alone / shared, 2),
        "max_abs_difference": difference,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes at batch size 2 (CI)")
    parser.add_argument("--dtype", choices=["bf16", "fp32"], help="default: bf16 on CUDA, fp32 on CPU")
    parser.add_argument("--new-tokens", type=int, default=32, help="tokens per decode (default 32)")
    parser.add_argument("--context-tokens", type=int, default=256, help="conditioned prompt length (default 256)")
    parser.add_argument("--history-tokens", type=int, default=64, help="history-only prompt length (default 64)")
    parser.add_argument(
        "--budget",
        type=float,
        default=420.0,
        help="seconds after which no new decode starts (default 420: the check ends within 8 min)",
    )
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU here; use --device cpu --tiny for the CPU run")
    if args.tiny:
        args.new_tokens, args.context_tokens, args.history_tokens = min(args.new_tokens, 4), 16, 4
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype or ("bf16" if args.device != "cpu" else "fp32")]
    started = time.monotonic()
    deadline = started + args.budget
    decodes, scorer = [], None
    for name in SHAPES:
        model = build(name, args.tiny, dtype, args.device)
        decodes += time_decodes(model, name, args, deadline)
        if not model.config.is_encoder_decoder:
            scorer = scorer_against_loop(model, args)
        del model
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
    bf16 = bf16_matches_fp32(args)
    tolerance = 0.05 if dtype == torch.bfloat16 else 1e-4
    passed = bf16["passed"] and scorer["max_abs_difference"] <= tolerance
    for row in decodes:
        print(row, file=sys.stderr)
    print(
        json.dumps(
            {
                "device": args.device,
                "gpu": torch.cuda.get_device_name() if args.device != "cpu" else None,
                "dtype": str(dtype).removeprefix("torch."),
                "tiny": args.tiny,
                "new_tokens": args.new_tokens,
                "decodes": decodes,
                "bf16_vs_fp32": bf16,
                "scorer": scorer,
                "seconds": round(time.monotonic() - started, 1),
                "passed": passed,
            }
        )
    )
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
