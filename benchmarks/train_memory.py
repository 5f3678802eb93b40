"""Where a fine-tuning run's memory goes: peak resident memory by phase of ``faithkit.train.train``.

Each case (a config plus flag overrides) runs in a fresh process, which trains as
``accelerate launch --num_processes 1 train.py`` would (one process, no mixed precision) and
tags what it is doing with a phase:

    model load, judge load, tokenize, eval: dev loss, eval: decoding, eval: judging,
    step 1: forward+backward, step 1: optimizer (AdamW allocates its state here), steps 2+,
    saving: state, saving: checkpoint, other

A thread samples the process's resident set (``/proc/self/statm``) every few milliseconds
into the current phase's peak; a phase during which ``ru_maxrss`` (the kernel's exact
high-water mark) rose gets that value instead, so the phase that sets the run's peak is
measured exactly. The phases are found by wrapping the loop's own functions, so the
benchmark runs unchanged against an older checkout (``PYTHONPATH=OLD python
benchmarks/train_memory.py``) for a before/after comparison.

    python benchmarks/train_memory.py [--config configs/train/smollm2-topicalchat.yaml]
        [--max-steps 3 --eval-steps 3] [--case NAME:FLAGS ...] [--keep DIR]

``--case 'fused:--optim adamw_torch_fused'`` adds a case with extra training flags (the default
case is the config as shipped). A case prints its losses (the run's metrics.csv, every digit)
so that two checkouts can be compared; the last line printed is one JSON object with each
case's peak by phase in MB, its ``ru_maxrss`` peak and its wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * PAGE / 2**20


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


class PhaseMeter:
    """The current phase (a stack: a wrapped call inside another is its own phase) and each phase's peak RSS."""

    def __init__(self, interval: float = 0.005):
        self.stack = ["other"]
        self.peaks: dict[str, float] = {}
        self.order: list[str] = []
        self.lock = threading.Lock()
        self.interval = interval
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self._record(rss_mb())
            time.sleep(self.interval)

    def _record(self, value: float, phase: str | None = None) -> None:
        with self.lock:
            phase = phase or self.stack[-1]
            if phase not in self.peaks:
                self.order.append(phase)
            self.peaks[phase] = max(self.peaks.get(phase, 0.0), value)

    def enter(self, phase: str) -> float:
        self._record(rss_mb())
        with self.lock:
            self.stack.append(phase)
        self._record(rss_mb())
        return maxrss_mb()

    def leave(self, phase: str, maxrss_before: float) -> None:
        after = maxrss_mb()
        if after > maxrss_before:  # the kernel's high-water mark rose during this phase: that is its exact peak
            self._record(after, phase)
        self._record(rss_mb())
        with self.lock:
            self.stack.pop()

    def wrap(self, function, phase):
        """``function`` run as ``phase`` (a name, or a callable giving the name of this call)."""

        def wrapped(*args, **kwargs):
            name = phase() if callable(phase) else phase
            before = self.enter(name)
            try:
                return function(*args, **kwargs)
            finally:
                self.leave(name, before)

        return wrapped


def child(args) -> None:
    """Train one case under the phase meter; print one JSON line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    started, cpu_started = time.perf_counter(), time.process_time()
    meter = PhaseMeter()

    import torch

    from faithkit.cli import main
    from faithkit.train import hooks, loop

    steps = {"train": 0, "optimizer": 0}

    def step_phase():
        steps["train"] += 1
        return "step 1: forward+backward" if steps["train"] == 1 else "steps 2+"

    def optimizer_phase():
        steps["optimizer"] += 1
        return "step 1: optimizer (state allocated)" if steps["optimizer"] == 1 else "steps 2+"

    def judged(load):
        def load_and_wrap(*a, **k):
            metrics = load(*a, **k)
            for metric in metrics.values():
                metric.compute = meter.wrap(metric.compute, "eval: judging")
            return metrics

        return load_and_wrap

    loop.build_model = meter.wrap(loop.build_model, "model load")
    loop.load_hook_metrics = meter.wrap(judged(loop.load_hook_metrics), "judge load")
    loop._encode = meter.wrap(loop._encode, "tokenize")
    loop.dev_loss = meter.wrap(loop.dev_loss, "eval: dev loss")
    hooks.generate_grid = meter.wrap(hooks.generate_grid, "eval: decoding")
    loop.train_step = meter.wrap(loop.train_step, step_phase)
    torch.optim.AdamW.step = meter.wrap(torch.optim.AdamW.step, optimizer_phase)
    loop.save_state = meter.wrap(loop.save_state, "saving: state")
    loop.save_checkpoint = meter.wrap(loop.save_checkpoint, "saving: checkpoint")

    code = main(["-q", "train", "--config", args.config, "--output-dir", args.output, *args.flags])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "exit": code,
                "peak_mb": round(usage.ru_maxrss / 1024),
                "by_phase_mb": {phase: round(meter.peaks[phase]) for phase in meter.order},
                "wall_s": round(time.perf_counter() - started, 1),
                "cpu_s": round(time.process_time() - cpu_started, 1),
            }
        )
    )


def losses(folder: Path) -> dict[str, dict[str, str]]:
    """``{key: {step: value}}`` of the run's losses, as metrics.csv wrote them (every digit)."""
    out: dict[str, dict[str, str]] = {}
    with (folder / "metrics.csv").open() as handle:
        for row in csv.DictReader(handle):
            if row["key"] in ("train_loss", "dev_loss"):
                out.setdefault(row["key"], {})[row["step"]] = row["value"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/train/smollm2-topicalchat.yaml")
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--eval-steps", type=int, default=3)
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        help="NAME:FLAGS, extra training flags of one more case (the case 'shipped' always runs)",
    )
    parser.add_argument("--keep", help="keep each case's output folder under this folder")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        config, output, *flags = args.child
        return child(argparse.Namespace(config=config, output=output, flags=flags))

    cases = {"shipped": []}
    for case in args.case:
        name, _, flags = case.partition(":")
        cases[name] = shlex.split(flags)
    common = ["--max-steps", str(args.max_steps), "--eval-steps", str(args.eval_steps)]
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="train-memory-"))
    results = {}
    for name, flags in cases.items():
        output = root / name
        command = [sys.executable, __file__, "--child", args.config, str(output), *common, *flags]
        run = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"case {name} failed:\n{run.stderr[-3000:]}")
        result = json.loads(run.stdout.strip().splitlines()[-1])
        result["losses"] = losses(output)
        results[name] = result
        print(f"{name}: peak {result['peak_mb']} MB, {result['wall_s']} s wall, {result['cpu_s']} s CPU")
        for phase, peak in result["by_phase_mb"].items():
            print(f"  {phase:38s} {peak:7d} MB")
        for key, values in result["losses"].items():
            print(f"  {key}: " + ", ".join(f"{step}={value}" for step, value in values.items()))
    print(
        json.dumps(
            {"config": args.config, "max_steps": args.max_steps, "eval_steps": args.eval_steps, "cases": results}
        )
    )


if __name__ == "__main__":
    main()
