"""Rerank candidates from a serving engine against faithkit's own sampling: the same rows, the same model.

* **engine**: ``faithkit candidates`` against llama.cpp's OpenAI-compatible server (llama-cpp-python[server], the
  ``serve`` extra) on the SmolLM2-135M-Instruct GGUF of the offline model (Q4_1), ``--threads`` threads; the
  greedy response and ``--n`` seeded samples per row, each its own request, ``--concurrency`` at a time, without
  the server's default repeat penalty 1.1, top-k 40 and min-p 0.05 (``--extra-body``: faithkit's sampling has
  none of them; with them the engine's samples were measured more faithful, p = 0.002). The server's start-up is
  reported, not timed.
* **in-process**: faithkit's sampling of the same model (the same GGUF, dequantised to float32) in this process,
  torch on ``--threads`` threads: the plain greedy decode and ``--n`` samples per row, each row from its own
  seeded generator, as ``faithkit generate --strategy plain --do-sample --num-return-sequences N`` draws them.

Both sample at temperature 1 without top-k or top-p, in the chat layout, up to 40 new tokens. Timed: drawing the
candidates only (wall time, rows/s). Then each side's candidates are reranked as ``faithkit rerank`` does
(SmolLM2 judging itself, PMI-FAITH, fluency tolerance 1) and the picks are judged by PMI-FAITH under gemma3-270m
(the sweep's judge in docs/rerank.md): the mean with its bootstrap interval per side, and the paired permutation
p-value of the difference. Also counted: rows whose greedy response is the same text on both sides (Q4_1 and
float32 differ in rounding, so some diverge). The last line printed is one JSON object.

    python benchmarks/engine_candidates.py --contexts 16 --n 8 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from faithkit.serving import models
from faithkit.cli import main as faithkit
from faithkit.data import read_results, read_rows
from faithkit.decoding import generate, row_seed
from faithkit.decoding.rerank import Rerank, rerank
from faithkit.metrics.pmi_faith import PMIFaith
from faithkit.generation.rerank import Judges
from faithkit.stats import bootstrap_interval, paired_permutation_test

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "q2_wow" / "dodeca_consistent.csv"
NEW_TOKENS = 40


def start_server(threads: int, port: int) -> tuple[subprocess.Popen, str, float]:
    """llama.cpp's server on the SmolLM2 GGUF; returns the process, its base URL and its start-up seconds."""
    gguf = models.OFFLINE_MODELS["smollm2-135m"].gguf_path()
    began = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "2048", "--n_threads", str(threads)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    while True:
        if process.poll() is not None:
            raise SystemExit(f"llama.cpp's server stopped with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                return process, url, time.perf_counter() - began
        except OSError:
            time.sleep(0.25)


def engine_candidates(url: str, rows_file: Path, output: Path, n: int, concurrency: int) -> tuple[list[dict], float]:
    began = time.perf_counter()
    code = faithkit(
        ["--quiet", "candidates", "--server", url, "--model", "smollm2-135m", "--input", str(rows_file),
         "--output", str(output), "--prompt", "text", "--n", str(n), "--temperature", "1", "--top-p", "1",
         "--seed", "0", "--max-new-tokens", str(NEW_TOKENS), "--concurrency", str(concurrency), "--restart",
         "--extra-body", '{"repeat_penalty": 1, "top_k": 0, "min_p": 0}']
    )  # fmt: skip
    seconds = time.perf_counter() - began
    if code != 0:
        raise SystemExit(f"faithkit candidates failed with status {code}")
    return read_results(output), seconds


def in_process_candidates(model, tokenizer, rows, n: int) -> tuple[list[dict], float]:
    documents, histories = [r.document for r in rows], [r.history for r in rows]
    began = time.perf_counter()
    greedy = generate(model, tokenizer, documents, histories, strategy="plain", max_new_tokens=NEW_TOKENS)
    samples = generate(
        model,
        tokenizer,
        documents,
        histories,
        strategy="plain",
        do_sample=True,
        num_return_sequences=n,
        seeds=[row_seed(0, r.id) for r in rows],
        max_new_tokens=NEW_TOKENS,
    )
    seconds = time.perf_counter() - began
    return [{"id": r.id, "greedy": g, "responses": s} for r, g, s in zip(rows, greedy, samples)], seconds


def judged(picks: list[str], rows, judge: PMIFaith) -> np.ndarray:
    scores = judge.compute_rows([r.document for r in rows], [r.history for r in rows], picks)
    return np.array([[s["pmi"]] for s in scores], dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=16)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    rows = list(read_rows(DATA))[: args.contexts]
    folder = Path(tempfile.mkdtemp(prefix="engine-candidates-"))
    rows_file = folder / "rows.jsonl"
    rows_file.write_text(
        "".join(json.dumps({"id": r.id, "document": r.document, "history": list(r.history)}) + "\n" for r in rows)
    )
    model, tokenizer = models.load("smollm2-135m")

    process, url, startup = start_server(args.threads, args.port)
    try:
        engine, engine_seconds = engine_candidates(url, rows_file, folder / "cands.jsonl", args.n, args.concurrency)
    finally:
        process.terminate()
        process.wait()
    local, local_seconds = in_process_candidates(model, tokenizer, rows, args.n)

    judges, strategy = Judges(model, tokenizer), Rerank(n=args.n)
    documents, histories = [r.document for r in rows], [r.history for r in rows]
    picks = {
        side: [
            choice.response
            for choice in rerank(
                strategy,
                judges,
                documents,
                histories,
                [c["greedy"] for c in cands],
                [c["responses"] for c in cands],
            )
        ]
        for side, cands in (("engine", engine), ("in_process", local))
    }
    del model, judges
    judge_model, judge_tokenizer = models.load("gemma3-270m")
    judge = PMIFaith(model=judge_model, tokenizer=judge_tokenizer)
    scores = {side: judged(texts, rows, judge) for side, texts in picks.items()}

    def mean(sums):
        return float(sums[0] / len(rows))

    result: dict = {"contexts": len(rows), "n": args.n, "threads": args.threads, "server_startup_s": round(startup, 1)}
    for side, seconds in (("engine", engine_seconds), ("in_process", local_seconds)):
        low, high = bootstrap_interval(scores[side], mean)
        result[side] = {
            "seconds": round(seconds, 1),
            "rows_per_s": round(len(rows) / seconds, 3),
            "pmi_faith_gemma3": round(mean(scores[side].sum(0)), 3),
            "interval": [round(low, 3), round(high, 3)],
        }
    result["speedup"] = round(local_seconds / engine_seconds, 2)
    result["p_same_faithfulness"] = round(paired_permutation_test(scores["engine"], scores["in_process"], mean), 3)
    result["same_greedy_rows"] = sum(e["greedy"] == i["greedy"] for e, i in zip(engine, local))
    for side in ("engine", "in_process"):
        r = result[side]
        print(
            f"{side:>10}: {r['seconds']:7.1f} s, {r['rows_per_s']:.3f} rows/s, "
            f"judged PMI-FAITH {r['pmi_faith_gemma3']:.3f} {r['interval']}"
        )
    print(
        f"engine / in-process speed: {result['speedup']}x; p = {result['p_same_faithfulness']}; "
        f"same greedy text on {result['same_greedy_rows']}/{len(rows)} rows"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
