"""How long ``faithkit candidates`` lasts against servers that misbehave, and what it writes (issue 52, case 5).

Each case runs ``python -m faithkit candidates`` (SmolLM2's tokenizer, 3 rows, ``--n 1``, ``--max-new-tokens 8``)
in its own process against the fake server of ``tests/cli/fake_engine.py`` on 127.0.0.1:

* **trickle**: every reply, headers included, one byte a second; ``--timeout 5`` and the default 3 retries. Timed:
  the command, start to exit (the issue measured 728 s before requests had a total deadline).
* **silent + SIGTERM / SIGINT**: two rows answered, then no answer at all; ``--timeout 300``. Timed: from the
  signal to the process's exit, with the rows kept (the issue: SIGTERM printed and the process stayed until
  SIGKILL; SIGINT gave a traceback).
* **flood**: every completion 50,000,000 characters long. Measured: the bytes written in the output folder (the issue:
  300 MB for 3 rows) and the command's wall time.

The last line printed is one JSON object of the figures.

    python benchmarks/network_bounds.py
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from fake_engine import FakeEngine  # noqa: E402  (the tests' fake server, by path)

ROWS = [{"id": f"r{i}", "document": f"Pears number {i} ripen late.", "history": ["When?"]} for i in range(3)]
ENVIRONMENT = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def command(url: str, folder: Path, *extra: str) -> list[str]:
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return [
        sys.executable, "-m", "faithkit", "candidates", "--server", url, "--model", "smollm2-135m", "--input",
        str(rows), "--output", str(folder / "c.jsonl"), "--n", "1", "--max-new-tokens", "8", *extra,
    ]  # fmt: skip


def run(argv: list[str], server: FakeEngine) -> tuple[int, float, float, str]:
    """The command's status, its wall seconds, the seconds from its first request to its error line (the process's
    teardown after it is not the requests' time), and that line."""
    began = time.monotonic()
    process = subprocess.Popen(argv, env=ENVIRONMENT, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    said, said_at = "", began
    for line in process.stderr:  # type: ignore[union-attr]
        if line.startswith("error: "):
            said, said_at = line.strip(), time.monotonic()
    process.wait()
    return process.returncode, time.monotonic() - began, said_at - (server.first_request or said_at), said


def trickle(folder: Path) -> dict:
    with FakeEngine("trickle", delay=1.0) as server:
        status, seconds, asking, said = run(command(server.url, folder, "--timeout", "5"), server)
    print(f"trickle: status {status} after {seconds:.1f} s; {asking:.1f} s from the first request to the error: {said}")
    return {"status": status, "seconds": round(seconds, 1), "from_first_request": round(asking, 1)}


def signalled(folder: Path, signum: int) -> dict:
    output = folder / "c.jsonl"
    with FakeEngine("hang", answers=4) as server:
        process = subprocess.Popen(  # python -m faithkit: as the program, as a user runs it
            command(server.url, folder, "--timeout", "300", "--chunk-size", "1"),
            env=ENVIRONMENT,
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        while len(server.requests) < 5:  # two rows written, the third row's requests waiting
            time.sleep(0.05)
        time.sleep(1.0)
        began = time.monotonic()
        process.send_signal(signum)
        _, err = process.communicate(timeout=120)
        seconds = time.monotonic() - began
    rows = output.read_text().count("\n") if output.exists() else 0
    print(f"{signal.Signals(signum).name}: status {process.returncode}, gone {seconds:.2f} s after the signal, "
          f"{rows} rows kept, traceback: {'Traceback' in err}")  # fmt: skip
    return {"status": process.returncode, "seconds": round(seconds, 2), "rows": rows, "traceback": "Traceback" in err}


def flood(folder: Path) -> dict:
    with FakeEngine("flood", flood=50_000_000) as server:
        status, seconds, asking, said = run(command(server.url, folder, "--retries", "0"), server)
    written = sum(path.stat().st_size for path in folder.iterdir() if path.name != "rows.jsonl")
    print(f"flood: status {status} after {seconds:.1f} s ({asking:.1f} s from the first request to the error), "
          f"{written:,} bytes written: {said}")  # fmt: skip
    return {
        "status": status,
        "seconds": round(seconds, 1),
        "from_first_request": round(asking, 1),
        "bytes_written": written,
    }


def main() -> None:
    figures = {}
    for name, case in (
        ("trickle", trickle),
        ("sigterm", lambda folder: signalled(folder, signal.SIGTERM)),
        ("sigint", lambda folder: signalled(folder, signal.SIGINT)),
        ("flood", flood),
    ):
        with tempfile.TemporaryDirectory() as folder:
            figures[name] = case(Path(folder))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
