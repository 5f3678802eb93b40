"""Does syncing results once per chunk make a cheap job on disk as fast as in memory?

``faithkit score --metric overlap-f1`` over ``--rows`` rows (50,000 by default, each its own
short document and response) writes one record per row. It runs with the output on disk
(``--disk``, default a fresh folder under /var/tmp) and on /dev/shm (memory: fsync costs
nothing there), each in its own process, alternating, ``--repeat`` times each (the fastest
run of each counts, as a shared machine slows runs at random); with ``--per-record`` also
once on disk with one fsync per record, as faithkit wrote before (patched in for that run), to
show what chunking saves. Every run's output must be identical, byte for byte. The last line
printed is one JSON object: wall seconds of each and the ratio disk / memory.

    python benchmarks/fsync_chunks.py --rows 50000 --per-record
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PER_RECORD = """
import os
from faithkit.data.results import ResultWriter
write = ResultWriter.write
def write_and_sync(self, record):
    write(self, record)
    os.fsync(self._file.fileno())
ResultWriter.write = write_and_sync
"""


def write_rows(path: Path, count: int) -> Path:
    with open(path, "w", encoding="utf-8") as file:
        for i in range(count):
            file.write(
                json.dumps(
                    {
                        "id": f"r{i}",
                        "document": f"Apples number {i} grow on tall trees in spring.",
                        "history": ["Tell me about apples."],
                        "response": f"apples {i} grow on trees",
                    }
                )
                + "\n"
            )
    return path


def timed_score(rows: Path, folder: Path, prelude: str = "") -> tuple[float, str]:
    """Wall seconds of one ``faithkit score`` into a fresh ``folder``, and the text of its output."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    output = folder / "scores.jsonl"
    argv = ["--quiet", "score", "--metric", "overlap-f1", "--input", str(rows), "--output", str(output)]
    code = f"{prelude}\nimport sys\nfrom faithkit.cli import main\nsys.exit(main({argv!r}))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - began
    records = output.read_text(encoding="utf-8")
    shutil.rmtree(folder)
    return seconds, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--disk", default="/var/tmp", help="a folder on a disk (not tmpfs)")
    parser.add_argument("--per-record", action="store_true", help="also time one fsync per record, on disk")
    parser.add_argument("--repeat", type=int, default=2, help="runs on disk and on /dev/shm, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.disk) as scratch:
        rows = write_rows(Path(scratch) / "rows.jsonl", args.rows)
        disk, memory, outputs = [], [], set()
        for _ in range(args.repeat):
            for times, folder in ((disk, Path(scratch) / "out"), (memory, Path(tempfile.mkdtemp(dir="/dev/shm")))):
                seconds, output = timed_score(rows, folder)
                times.append(round(seconds, 2))
                outputs.add(output)
        figures = {
            "rows": args.rows,
            "disk_seconds": disk,
            "shm_seconds": memory,
            "disk_over_shm": round(min(disk) / min(memory), 3),
            "identical": len(outputs) == 1,
        }
        if args.per_record:
            before, output = timed_score(rows, Path(scratch) / "out", PER_RECORD)
            outputs.add(output)
            figures.update(
                per_record_disk_seconds=round(before, 2),
                per_record_over_chunked=round(before / min(disk), 2),
                identical=len(outputs) == 1,
            )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
