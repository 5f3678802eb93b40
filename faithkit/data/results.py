"""Results out: one JSON object per row, appended as rows finish, so a rerun resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path


class ResultWriter:
    """Append one JSON object per row to a JSONL file, keyed by row id, so a rerun resumes.

    Opening an existing file reads the ids already written (a half-written last line from
    a crash is cut off) and :meth:`done` tells the job which rows to skip.
    """

    def __init__(self, path: str | Path, resume: bool = True):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.completed: set[str] = set()
        if resume and self.path.exists():
            self._recover()
        elif self.path.exists():
            self.path.unlink()
        self._file = open(self.path, "a", encoding="utf-8")

    def _recover(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a crash mid-line: drop the partial record
            with open(self.path, "r+b") as handle:
                handle.truncate(end)
        for line in data[:end].decode("utf-8").splitlines():
            if line.strip():
                self.completed.add(str(json.loads(line)["id"]))

    def done(self, row_id: str) -> bool:
        return str(row_id) in self.completed

    def write(self, record: dict) -> None:
        if "id" not in record:
            raise ValueError("every result record needs an 'id'")
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.completed.add(str(record["id"]))

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_results(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
