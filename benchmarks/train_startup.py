"""Start-up of ``faithkit train`` before its first step, with the tokenization cache cold and then warm.

Runs the same config twice, in fresh output folders, against one fresh ``datasets`` cache
(``HF_DATASETS_CACHE`` in a temporary folder): the first run tokenizes the rows through
``Dataset.map`` into the cache, the second finds them there. Each run is timed from launch to
the log line ``training N steps …``, which the loop prints once data, model, tokenization and
accelerate's ``prepare`` are done (the evaluation before training and the steps follow it); wall
and CPU time (of the training process itself) are taken there and the run is stopped. The last
line printed is one JSON object with both runs' figures and their ratio.

    python benchmarks/train_startup.py --config configs/train/tiny-gpt2.yaml
    python benchmarks/train_startup.py --config configs/train/smollm2-topicalchat.yaml -- --max-steps 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

READY = "training "  # the loop's "training N steps (…)" line


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_up(config: str, output_dir: Path, extra: list[str], env: dict) -> dict:
    command = [sys.executable, "-m", "faithkit", "train", "--config", config, "--output-dir", str(output_dir), *extra]
    began = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    log = []
    try:
        for line in process.stderr:
            log.append(line.rstrip())
            if READY in line and "steps" in line:
                figures = {"wall_s": round(time.perf_counter() - began, 2), "cpu_s": round(cpu_seconds(process.pid), 2)}
                break
        else:
            raise SystemExit("the run ended before its first step:\n" + "\n".join(log[-20:]))
    finally:
        process.terminate()
        process.wait()
    figures["from_cache"] = any("read from the cache" in line for line in log)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("extra", nargs="*", help="more faithkit train flags, after --")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "HF_DATASETS_CACHE": str(Path(folder) / "datasets")}
        first = start_up(args.config, Path(folder) / "first", args.extra, env)
        second = start_up(args.config, Path(folder) / "second", args.extra, env)
    print(f"first run (tokenizes): {first}\nsecond run (same config): {second}")
    print(
        json.dumps(
            {
                "config": args.config,
                "extra": args.extra,
                "first": first,
                "second": second,
                "wall_ratio": round(first["wall_s"] / second["wall_s"], 2),
                "cpu_ratio": round(first["cpu_s"] / second["cpu_s"], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
