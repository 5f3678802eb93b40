"""Training throughput of faithkit's loop against a plain accelerate loop, and the time of one evaluation round.

For each model (the random 2-layer GPT-2 of ``configs/train/tiny-gpt2.yaml`` and SmolLM2-135M
of ``configs/train/smollm2-topicalchat.yaml``), the same model (``build_model``, same seed),
batches (the config's rows through faithkit's encoding and collator, the same seeded
sampler), AdamW, linear schedule, gradient clipping and accumulation run

* ``plain``: :func:`plain_loop`, the ~30-line accelerate loop of transformers'
  ``run_clm_no_trainer.py`` (the model's own ``.loss``; activation checkpointing when the config
  asks for it, as for faithkit), and
* ``faithkit``: :func:`faithkit.train.train` with the hooks off (no decoding, no judge, no
  evaluation before training; dev loss, saving and logging happen only after the timed steps).

Each variant is timed from the start of its ``--warmup``-th+1 optimizer step to the end of its
last, and counts the tokens of those steps' batches (the same batches on both sides, checked).
The variants alternate ``--repeats`` times in this one process so that load from other
processes hits both alike; the best time of each is kept. ``ratio_*`` is faithkit's tokens/s
over the plain loop's.

Then one evaluation round of the SmolLM2 config as shipped (dev loss, greedy and PMI-DECODE
decoding of the dev subset, PMI-FAITH judging with its judge model, lexical metrics) is timed
phase by phase, with the judge asked for PMI-FAITH's two views (training's default) and for
all four (``unconditional: true``).

    python benchmarks/train_throughput.py [--threads N] [--repeats 2] [--tiny-steps 40]
        [--smollm2-steps 4] [--skip-eval-round]

The last line printed is one JSON object: ``ratio_tiny_gpt2``, ``ratio_smollm2``, each variant's
tokens/s, and the evaluation round's seconds by phase.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars between the figures

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState, GradientState
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch.utils.data import DataLoader
from transformers import get_scheduler

from faithkit.decoding import default_template, pad_token_id
from faithkit.train import load_config, loop, train
from faithkit.train.data import Collator, encode_rows, load_rows
from faithkit.train.model import build_model

REPO = Path(__file__).resolve().parents[1]
CONFIGS = {
    "tiny_gpt2": REPO / "configs/train/tiny-gpt2.yaml",
    "smollm2": REPO / "configs/train/smollm2-topicalchat.yaml",
}


class StepClock:
    """Times optimizer steps ``warmup+1 .. last`` and counts their tokens (attention-mask ones)."""

    def __init__(self, warmup: int):
        self.warmup, self.steps, self.tokens, self.started, self.seconds = warmup, 0, 0, None, 0.0

    def begin(self, window: list[dict]) -> None:
        if self.steps == self.warmup:
            self.started = time.perf_counter()
        if self.steps >= self.warmup:
            self.tokens += sum(int(batch["attention_mask"].sum()) for batch in window)

    def end(self) -> None:
        self.steps += 1
        if self.started is not None:
            self.seconds = time.perf_counter() - self.started


def plain_loop(config, clock: StepClock) -> None:
    """A plain accelerate fine-tuning loop on the config's model, batches, optimizer and schedule."""
    t, d = config.training, config.data
    accelerator = Accelerator(
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        dataloader_config=(DataLoaderConfiguration(split_batches=True, use_seedable_sampler=True, data_seed=t.seed)),
    )
    set_seed(t.seed)
    model, tokenizer = build_model(config.model, t.seed)
    if t.activation_checkpointing:
        loop.enable_activation_checkpointing(model)
    examples, _ = encode_rows(
        load_rows(d, "train"), tokenizer, default_template(model, tokenizer), False, d.max_length, d.max_response_length
    )
    loader = DataLoader(
        examples,
        batch_size=t.batch_size,
        shuffle=True,
        drop_last=True,
        collate_fn=Collator(pad_token_id(tokenizer)),
        generator=torch.Generator().manual_seed(t.seed),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=t.learning_rate, weight_decay=t.weight_decay)
    scheduler = get_scheduler(
        "linear", optimizer, num_warmup_steps=math.ceil(t.warmup_ratio * t.max_steps), num_training_steps=t.max_steps
    )
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    model.train()
    epoch = 0
    while clock.steps < t.max_steps:
        loader.set_epoch(epoch)
        window = []  # an epoch's incomplete last window is left out, as faithkit's loop does
        for batch in loader:
            window.append(batch)
            if len(window) < t.gradient_accumulation_steps:
                continue
            clock.begin(window)
            for part in window:
                with accelerator.accumulate(model):
                    loss = model(**part).loss
                    accelerator.backward(loss)
                    if accelerator.sync_gradients and t.max_grad_norm is not None:
                        accelerator.clip_grad_norm_(model.parameters(), t.max_grad_norm)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
            loss.item()
            clock.end()
            window = []
            if clock.steps == t.max_steps:
                break
        epoch += 1


def faithkit_loop(config, clock: StepClock) -> None:
    """faithkit's loop with the hooks off, timed around its train_step calls."""
    real_step = loop.train_step

    def timed_step(accelerator, model, optimizer, scheduler, window, *rest):
        clock.begin(window)
        loss = real_step(accelerator, model, optimizer, scheduler, window, *rest)
        clock.end()
        return loss

    output = Path(tempfile.mkdtemp(prefix="throughput-"))
    loop.train_step = timed_step
    try:
        train(config, output / "run")
    finally:
        loop.train_step = real_step
        shutil.rmtree(output, ignore_errors=True)


def reset_accelerate() -> None:
    AcceleratorState._reset_state(True)
    GradientState._reset_state()


def throughput(name: str, steps: int, warmup: int, repeats: int) -> dict:
    overrides = {
        "training.max_steps": steps,
        "evaluation.generate_rows": 0,
        "evaluation.eval_at_start": False,
        "evaluation.eval_steps": steps,
        "evaluation.log_with": [],
        "training.mixed_precision": "no",
    }
    config = load_config(CONFIGS[name], overrides)
    best, tokens = {}, {}
    for repeat in range(repeats):
        for variant, run in (("plain", plain_loop), ("faithkit", faithkit_loop)):
            clock = StepClock(warmup)
            run(config, clock)
            reset_accelerate()
            best[variant] = min(best.get(variant, math.inf), clock.seconds)
            tokens.setdefault(variant, clock.tokens)
            print(
                f"{name} {variant} run {repeat + 1}: {clock.tokens} tokens in {clock.seconds:.2f} s "
                f"= {clock.tokens / clock.seconds:.0f} tokens/s",
                flush=True,
            )
    if tokens["plain"] != tokens["faithkit"]:
        raise SystemExit(f"{name}: the loops saw different batches ({tokens})")
    rates = {variant: tokens[variant] / seconds for variant, seconds in best.items()}
    return {
        "tokens": tokens["plain"],
        "timed_steps": steps - warmup,
        "plain_tokens_per_s": round(rates["plain"], 1),
        "faithkit_tokens_per_s": round(rates["faithkit"], 1),
        "ratio": round(rates["faithkit"] / rates["plain"], 3),
    }


def evaluation_round(unconditional: bool) -> dict:
    """Seconds of each part of one evaluation of the shipped SmolLM2 config (its judge loads for each evaluation)."""
    from faithkit.train import hooks

    config = load_config(CONFIGS["smollm2"])
    e, d = config.evaluation, config.data
    e.metric_options = {
        **e.metric_options,
        "pmi-faith": {**e.metric_options.get("pmi-faith", {}), "unconditional": unconditional},
    }
    started = time.perf_counter()
    metrics = hooks.load_hook_metrics(e)
    judge_load = time.perf_counter() - started
    model, tokenizer = build_model(config.model, config.training.seed)
    dev_rows = load_rows(d, "dev")
    examples, _ = encode_rows(
        dev_rows, tokenizer, default_template(model, tokenizer), False, d.max_length, d.max_response_length
    )
    accelerator = Accelerator()
    dev_loader = accelerator.prepare(
        DataLoader(examples, batch_size=e.eval_batch_size, collate_fn=Collator(pad_token_id(tokenizer)))
    )
    hook = hooks.build_hook(e, dev_rows, lambda: metrics, model, tokenizer, d.max_length)
    seconds = {"judge_load": judge_load}
    real_grid, real_computes = hooks.generate_grid, {name: metric.compute for name, metric in metrics.items()}

    def timed(key, function):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - started

        return run

    hooks.generate_grid = timed("decoding", real_grid)
    for name, metric in metrics.items():
        metric.compute = timed(f"judging: {name}", real_computes[name])
    try:
        timed("dev_loss", loop.dev_loss)(accelerator, model, dev_loader, loop.TokenLoss.for_model(model))
        model.eval()
        with torch.no_grad():
            scalars, _ = timed("hook", hook)(model, tokenizer)
    finally:
        hooks.generate_grid = real_grid
    reset_accelerate()
    seconds["round"] = seconds["dev_loss"] + seconds.pop("hook") + seconds["judge_load"]
    return {"keys": sorted(scalars), **{key: round(value, 1) for key, value in seconds.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tiny-steps", type=int, default=40)
    parser.add_argument("--smollm2-steps", type=int, default=4)
    parser.add_argument("--skip-eval-round", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.chdir(REPO)  # the tiny config's rows files are relative to the repository
    figures = {"threads": args.threads}
    for name, steps in (("tiny_gpt2", args.tiny_steps), ("smollm2", args.smollm2_steps)):
        figures[name] = throughput(name, steps, warmup=max(1, steps // 10), repeats=args.repeats)
        figures[f"ratio_{name}"] = figures[name]["ratio"]
    if not args.skip_eval_round:
        for unconditional in (False, True):
            key = f"eval_round_s_unconditional_{str(unconditional).lower()}"
            figures[key] = evaluation_round(unconditional)
            print(key, figures[key], flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
