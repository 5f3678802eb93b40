"""Row files, result files and faithkit subprocesses for the command-line tests."""

from __future__ import annotations

import csv
import json
import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

from faithkit.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_main(*argv) -> int:
    """``faithkit ARGV`` in this process; faithkit's logging is left as it was (main sets it up for a whole process,
    on the stderr of the moment, which under pytest is a capture that closes with the test)."""
    logger = logging.getLogger("faithkit")
    handlers, level = logger.handlers[:], logger.level
    try:
        return main([str(arg) for arg in argv])
    finally:
        logger.handlers[:], logger.level = handlers, level


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_wow_csv(path: Path, responses: list[str], knowledge: str) -> Path:
    """A Q² WoW file (the dodeca columns), one row per response, all on one document and question."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "episode_idx", "round", "topic", "message", "response", "knowledge", "gold"])
        for index, response in enumerate(responses):
            writer.writerow([index, index, 1, "Apples", "Do you like apples?", response, knowledge, "gold reply"])
    return path


def mann_whitney(scores, labels) -> float:
    """AUROC by counting: the share of (positive, negative) pairs the positive wins, a tie counting half."""
    positives = [s for s, label in zip(scores, labels) if label]
    negatives = [s for s, label in zip(scores, labels) if not label]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def subprocess_env() -> dict:
    """The environment of a faithkit subprocess: offline, one thread, this checkout first on the path."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }


def free_port() -> int:
    """A TCP port nobody listens on, for the processes of one `accelerate launch` to meet on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_faithkit(*argv, prelude: str = "") -> subprocess.Popen:
    """``faithkit ARGV`` in its own process; ``prelude`` is Python run first (e.g. to slow a metric down)."""
    argv = [str(arg) for arg in argv]
    # Ctrl-C as from a terminal: a shell's background job (`pytest … &`) starts with SIGINT ignored, which the
    # child would inherit, and then no Ctrl-C test could stop it
    restore = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)"
    program = f"import sys\nfrom faithkit.cli import main\nsys.argv[1:] = {argv!r}\nsys.exit(main())"  # as the program
    command = ["-c", f"{restore}\n{prelude}\n{program}"]
    return subprocess.Popen(
        [sys.executable, *command],
        env=subprocess_env(),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def crash_after(monkeypatch, owner, name: str, documents_at: int, rows: int, error: BaseException) -> None:
    """Let ``rows`` rows through ``owner.name`` (its argument ``documents_at`` is the chunk's documents), then raise
    ``error`` from the chunk that would pass that count, as a Ctrl-C, a kill or a crash would stop it."""
    original = getattr(owner, name)
    passed = 0

    def crashing(*args, **kwargs):
        nonlocal passed
        passed += len(args[documents_at])
        if passed > rows:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, crashing)


def choices_of(action) -> tuple:
    """The values a flag accepts: argparse's own choices, or those a declared flag's type checks."""
    return tuple(action.choices or getattr(action.type, "choices", None) or ())
