"""Peak memory and time of PMI-FAITH on long inputs: the scorer of commit dc23f50 ("before") vs today's ("after").

Cases, each scored by ``PMIFaith`` (all four views) in a fresh process:

- ``long_response``: one response of ``--response-tokens`` tokens under a short document and one turn;
- ``long_document``: a document of ``--document-words`` words (cut to the model's context, keeping
  its end) under one turn, with a short response.

Texts are distinct BEGIN CMU-DoG knowledge passages in file order, so they tokenise like real
text. "before" runs the old module (``git show dc23f50:faithkit/serving/scoring.py``) in place of
``metric.scorer``; every child runs under a watchdog that kills it above ``--limit-gb`` of
resident memory, so a case that would exhaust the shared machine reports "killed" instead.
Peak RSS is the child's own ``ru_maxrss`` from ``os.wait4``; "scoring_s" times
``compute_rows`` alone, "total_s" the whole child (imports and model load included), "cpu_s"
its CPU time (user + system, all threads). Other work on a shared machine stretches wall
times, so the load average at the end of scoring is recorded too.
Cases run before and after at the same size must give the same scores (checked). The old
scorer's peak grows by about 2 GB per 1,000 response tokens (21 GB was reported at 6,000 on a
24 GB machine), so by default it scores a 3,000-token response, and "after" runs both sizes.

    python benchmarks/long_input_memory.py [--model smollm2-135m] [--response-tokens 6000]
        [--before-response-tokens 3000] [--document-words 20000] [--limit-gb 12]
        [--cases long_response long_document]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from faithkit.data import data_root

BEFORE_COMMIT = "dc23f50"
SOURCE = data_root() / "begin" / "begin_dev_cmu.tsv"
REPO = Path(__file__).resolve().parents[1]


def passages() -> list[str]:
    """Distinct knowledge passages of BEGIN CMU-DoG dev, in file order."""
    csv.field_size_limit(1 << 30)
    with open(SOURCE, newline="", encoding="utf-8") as handle:
        fields = [row["knowledge"].strip() for row in csv.DictReader(handle, delimiter="\t")]
    return list(dict.fromkeys(f for f in fields if f))


def long_text(tokenizer, pieces: list[str], tokens: int | None = None, words: int | None = None) -> str:
    """Whole passages joined until the text has ``tokens`` tokens (then cut there) or ``words`` words."""
    text = ""
    for piece in pieces * 10:
        text = f"{text} {piece}".strip()
        if words is not None and len(text.split()) >= words:
            return " ".join(text.split()[:words])
        if tokens is not None:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) >= tokens:
                return tokenizer.decode(ids[:tokens])
    raise ValueError("not enough text in the source passages")


def child(args) -> None:
    """Score one case with the chosen scorer; print one JSON line."""
    import resource

    from faithkit.metrics import PMIFaith

    started = time.perf_counter()
    metric = PMIFaith(args.model)
    if args.scorer == "before":
        metric.scorer = old_scorer_class()(metric.model, batch_size=metric.scorer.batch_size)
    pieces = passages()
    history = ["i like michael caine too"]
    if args.case == "long_response":
        document, response = pieces[0], long_text(metric.tokenizer, pieces[1:], tokens=args.size)
    else:
        document, response = long_text(metric.tokenizer, pieces, words=args.size), "but i didn't watch the whole movie"
    loaded_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scoring = time.perf_counter()
    [row] = metric.compute_rows([document], [history], [response])
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "response_tokens": row["num_tokens"],
                "truncated_tokens": row["truncated_tokens"],
                "pmi": row["pmi"],
                "uncond_pmi": row["uncond_pmi"],
                "loaded_rss_gb": round(loaded_kb / 2**20, 2),
                "scoring_s": round(done - scoring, 1),
                "child_s": round(done - started, 1),
                "load_avg_1min": os.getloadavg()[0],
            }
        )
    )


def old_scorer_class():
    """``TokenScorer`` as of commit dc23f50, loaded from git into a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{BEFORE_COMMIT}:faithkit/serving/scoring.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("scoring_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up there
    exec(compile(source, f"{BEFORE_COMMIT}:faithkit/serving/scoring.py", "exec"), module.__dict__)
    return module.TokenScorer


def run_case(args, case: str, scorer: str, size: int) -> dict:
    """One child process under a resident-memory watchdog; its figures, peak RSS and wall time."""
    command = [
        sys.executable,
        __file__,
        "--child",
        case,
        "--scorer",
        scorer,
        "--size",
        str(size),
        "--model",
        args.model,
    ]
    print(f"running {case} ({size}) with the {scorer} scorer", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(command, stdout=out)
        killed = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if not killed and resident_gb(process.pid) > args.limit_gb:
                os.kill(process.pid, signal.SIGKILL)
                killed = True
            time.sleep(0.2)
        process.returncode = os.waitstatus_to_exitcode(status)  # already reaped by wait4
        out.seek(0)
        lines = out.read().splitlines()
    result = {
        "case": case,
        "scorer": scorer,
        "size": size,
        "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),
        "total_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
    }
    if killed:
        result["killed_above_gb"] = args.limit_gb
    elif process.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(command)} failed with exit code {process.returncode}")
    else:
        result.update(json.loads(lines[-1]))
    print(json.dumps(result), file=sys.stderr, flush=True)
    return result


def resident_gb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 2**20
    except FileNotFoundError:
        pass
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--response-tokens", type=int, default=6000)
    parser.add_argument(
        "--before-response-tokens",
        type=int,
        default=3000,
        help="response length for the old scorer (its peak grows fast with length)",
    )
    parser.add_argument("--document-words", type=int, default=20000)
    parser.add_argument("--limit-gb", type=float, default=12.0, help="kill a child whose RSS exceeds this")
    parser.add_argument(
        "--cases", nargs="+", choices=["long_response", "long_document"], default=["long_response", "long_document"]
    )
    parser.add_argument("--child", choices=["long_response", "long_document"], help=argparse.SUPPRESS)
    parser.add_argument("--scorer", choices=["before", "after"], help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.case = args.child
        return child(args)

    runs = [
        ("long_response", "before", args.before_response_tokens),
        ("long_response", "after", args.before_response_tokens),
        ("long_response", "after", args.response_tokens),
        ("long_document", "before", args.document_words),
        ("long_document", "after", args.document_words),
    ]
    if args.before_response_tokens == args.response_tokens:
        runs.remove(("long_response", "after", args.response_tokens))
    runs = [run for run in runs if run[0] in args.cases]
    results = [run_case(args, *run) for run in runs]
    print(
        f"{'case':<15} {'scorer':<7} {'size':>6} {'tokens':>6} {'peak RSS GB':>11} {'scoring s':>9} "
        f"{'total s':>8} {'CPU s':>7} {'load':>5}  pmi"
    )
    for r in results:
        peak = f">{r['killed_above_gb']}" if "killed_above_gb" in r else r["peak_rss_gb"]
        print(
            f"{r['case']:<15} {r['scorer']:<7} {r['size']:>6} {r.get('response_tokens', '-'):>6} {peak:>11} "
            f"{r.get('scoring_s', '-'):>9} {r['total_s']:>8} {r['cpu_s']:>7} {r.get('load_avg_1min', 0):>5.1f}  "
            f"{r.get('pmi', '-')}"
        )
    for before in (r for r in results if r["scorer"] == "before" and "pmi" in r):
        [after] = [
            r for r in results if r["scorer"] == "after" and r["case"] == before["case"] and r["size"] == before["size"]
        ]
        for key in ("pmi", "uncond_pmi"):
            if abs(before[key] - after[key]) > 1e-4:
                raise SystemExit(f"{before['case']}: {key} differs before/after: {before[key]} vs {after[key]}")
    print(json.dumps({"model": args.model, "runs": results}))


if __name__ == "__main__":
    main()
