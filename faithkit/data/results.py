"""Results out: one JSON object per row, appended as rows finish, so a rerun resumes safely.

A result file ``OUT.jsonl`` comes with ``OUT.jsonl.meta.json``, the job's *fingerprint*
(command, metric or decoding settings, model, template, faithkit version). A rerun resumes
only when its fingerprint is the same; otherwise it stops and says what differs. While a
job runs it holds ``OUT.jsonl.lock`` (an advisory lock), so a second run on the same output
stops at once instead of interleaving records; the writer deletes it when it finishes. A lock
file a killed run left is not held by anyone (the system drops the lock with the process), so
the next run takes it. Error records are retried on every rerun unless the caller keeps them.
None of these files is written through a link (see :mod:`faithkit.data.files`). A run that stops with an exception before
its first record (a model that cannot load, a bad setting found late) leaves neither file behind.

Crash guarantee: each record is one line, flushed to the operating system as it is written,
and the file is synced to the disk once per chunk (:meth:`ResultWriter.sync`, called by
:mod:`faithkit.data.jobs` after every chunk, at the end and on Ctrl-C or SIGTERM). After a
``kill -9`` every flushed record is in the file; after a power cut or an operating-system
crash, at most the records written since the last sync (one chunk) are lost. Either way a
rerun recomputes only what is missing: a half-written last line is cut off, and a record is
never torn in the middle of the file or there twice (ids are checked on reopening).

Each record also carries ``row_digest``, a :func:`content_digest` of the input row it was made
from. Given the digests the input has now (``expected``), a rerun drops the records whose row
changed, so they are computed again, and counts the records whose id the input no longer has.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from collections.abc import Mapping

from filelock import FileLock, Timeout

from ..settings import redaction
from ..errors import OutputError
from .files import WriteFailed, open_append, refuse_link, to_json, write_text
from .schema import ID, Object, read_json_file, read_json_line

DIGEST_KEY = "row_digest"
"""The record field holding the :func:`content_digest` of the input row it was made from."""


def content_digest(value) -> str:
    """A short hash of any JSON-like value (dict keys in any order), to tell whether an input row changed."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def restart_hint(flag: str = "--output") -> str:
    """The end of every refusal to resume: how to start over. ``flag`` is the command's output option."""
    return f"rerun with --restart to start it over, or choose another {flag}"


class ResultWriter:
    """Append one JSON object per row (each with an ``id``) to a JSONL file; :meth:`done` tells which rows to skip.

    Opening an existing file checks its fingerprint and every line: a half-written last line
    from a crash is cut off; a damaged line, a record without id or a repeated id stops with
    an :class:`~faithkit.errors.OutputError` naming the line. ``retry_errors`` drops earlier
    error records so their rows run again. ``expected`` maps the input's ids to their rows'
    digests (``None``: not checked): records whose ``row_digest`` differs are dropped
    (:attr:`changed` counts them) and the ids the input lacks are listed in :attr:`orphans`.
    Messages name ``flag``, the command's option for this output.
    """

    def __init__(
        self,
        path: str | Path,
        resume: bool = True,
        fingerprint: dict | None = None,
        retry_errors: bool = True,
        expected: Mapping[str, str | None] | None = None,
        flag: str = "--output",
    ):
        self.path, self.flag = Path(path), flag
        fingerprint = redaction.redacted(fingerprint)  # as .meta.json holds it, so that a rerun compares like with like
        self.meta_path = self.path.with_name(self.path.name + ".meta.json")
        self.completed: set[str] = set()
        self.retried = self.changed = 0
        self.written = 0  # records this writer wrote, the file's earlier ones not counted
        self.orphans: list[str] = []
        _prepare_folder(self.path, flag)
        for path in (self.path, self.meta_path, Path(f"{self.path}.lock")):
            refuse_link(path, flag)
        self._lock = FileLock(str(self.path) + ".lock")
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise OutputError(
                f"another run is writing {self.path} (it holds {self.path}.lock); wait for it to "
                f"finish, or choose another {flag}"
            ) from None
        try:
            if resume and self.path.exists():
                self._check_fingerprint(fingerprint)
                self._recover(retry_errors, expected)
            elif self.path.exists():
                self.path.unlink()
            if fingerprint is not None:
                write_text(self.meta_path, json.dumps(fingerprint, indent=2, sort_keys=True, allow_nan=False) + "\n")
            self._file = open_append(self.path, flag)
        except WriteFailed as error:
            self._unlock()
            raise OutputError(f"cannot write {error.path}: {error.reason}; {self._saved()}") from None
        except OutputError:
            self._unlock()
            raise
        except OSError as error:
            self._unlock()
            raise OutputError(
                f"cannot write {error.filename or self.path}: {error.strerror}; {self._saved()}"
            ) from None
        except BaseException:
            self._unlock()
            raise

    def _check_fingerprint(self, fingerprint: dict | None) -> None:
        if fingerprint is None or not _has_records(self.path):
            return
        if not self.meta_path.exists():
            raise OutputError(
                f"{self.path} holds results but no record of the job that wrote them "
                f"({self.meta_path.name} is missing); {restart_hint(self.flag)}"
            )
        recorded = read_json_file(self.meta_path, Object({}), restart_hint(self.flag), error=OutputError)
        changes = _differences(recorded, fingerprint)
        if changes:
            raise OutputError(
                f"{self.path} was written by a different job ({'; '.join(changes)}); "
                f"to continue it, rerun with its settings; otherwise {restart_hint(self.flag)}"
            )

    def _recover(self, retry_errors: bool, expected: Mapping[str, str | None] | None) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1  # a crash mid-line leaves a partial record: drop it
        kept: list[str] = []
        first_line: dict[str, int] = {}
        for number, line in enumerate(data[:end].decode("utf-8", errors="replace").split("\n"), start=1):
            if not line.strip():
                continue
            record = _parse(line, number, self.path, self.flag)
            row_id = str(record["id"])
            if row_id in first_line:
                raise OutputError(
                    f"{self.path}: id '{row_id}' appears on lines {first_line[row_id]} and {number}; "
                    f"delete one of them, or {restart_hint(self.flag)}"
                )
            first_line[row_id] = number
            if retry_errors and "error" in record:
                self.retried += 1
                continue
            if expected is not None and row_id not in expected:
                self.orphans.append(row_id)
            elif expected is not None and expected[row_id] is not None and record.get(DIGEST_KEY) != expected[row_id]:
                self.changed += 1
                continue
            kept.append(line)
            self.completed.add(row_id)
        if self.retried or self.changed or end < len(data):
            write_text(self.path, "".join(line + "\n" for line in kept))

    def done(self, row_id: str) -> bool:
        return str(row_id) in self.completed

    def write(self, record: dict) -> None:
        if "id" not in record:
            raise ValueError("every result record needs an 'id'")
        line = to_json(record) + "\n"
        try:
            self._file.write(line)
            self._file.flush()
        except OSError as error:
            self._abandon_file()
            raise self._write_failed(error) from None
        self.completed.add(str(record["id"]))
        self.written += 1

    def sync(self) -> None:
        """Make the records written so far survive a power cut (see the module's crash guarantee)."""
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as error:
            self._abandon_file()
            raise self._write_failed(error) from None

    def _write_failed(self, error: OSError) -> OutputError:
        return OutputError(f"cannot write {self.path}: {error.strerror or error}; {self._saved()}")

    def _saved(self) -> str:
        return (
            f"{len(self.completed)} records are saved in {self.path}; free space (or fix the folder) and rerun "
            f"the same command to continue"
        )

    def _abandon_file(self) -> None:
        """Drop the file's unwritten buffer: a failed write leaves at most a partial last line, cut on resuming."""
        try:
            os.close(self._file.fileno())
        except OSError:
            pass
        try:
            self._file.close()
        except (OSError, ValueError):
            pass

    def count(self) -> int:
        """Records in the file now; after Ctrl-C, :attr:`completed` may lag by the record whose write it cut short."""
        self._file.flush()
        with open(self.path, "rb") as file:
            return sum(1 for _ in file)

    def reorder(self, ids: list[str]) -> None:
        """Rewrite the file with its records in the order of ``ids`` (records of other ids keep their place at the end).

        The ordered copy is written beside the file and renamed over it, so a failure (a full disk) leaves the
        file whole, in the order the records were written, and a rerun puts it in order."""
        self._file.close()
        records = read_results(self.path)
        rank = {row_id: i for i, row_id in enumerate(ids)}
        records.sort(key=lambda r: rank.get(str(r["id"]), len(rank)))
        try:
            write_text(self.path, "".join(to_json(r) + "\n" for r in records))
        except WriteFailed as error:
            raise OutputError(
                f"cannot put {self.path} in input order: {error.reason}; "
                f"all {len(records)} records are saved in it, in the order they were computed; free "
                f"space and rerun the same command to put them in order"
            ) from None
        self._file = open_append(self.path, self.flag)

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:  # a full disk: the write that failed said so
            pass
        self._unlock()

    def _unlock(self) -> None:
        """Delete the lock file, then release the lock: deleting it while held means a run that opened it meanwhile
        finds it locked and stops, and any later run makes a fresh one."""
        Path(self._lock.lock_file).unlink(missing_ok=True)
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        self.close()
        if kind is not None and not self.written and not self.completed:
            self._discard_empty()

    def _discard_empty(self) -> None:
        """Delete the file and its fingerprint when the job failed before its first record and the file holds none:
        what is left is no result, and would only read as one."""
        try:
            if self.path.exists() and not _has_records(self.path):
                self.path.unlink()
                self.meta_path.unlink(missing_ok=True)
        except OSError:  # a full or read-only disk: the error that stopped the job says what to do
            pass


def read_results(path: str | Path) -> list[dict]:
    """Every record of a result file; a damaged line is an :class:`OutputError` naming it."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")  # JSON escapes every newline; U+2028 may stay raw
    except UnicodeDecodeError as error:
        raise OutputError(f"{path} is not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    return [_parse(line, number, path) for number, line in enumerate(lines, start=1) if line.strip()]


RECORD = Object({"id": ID})
"""A result file's record: the row's id, then what the job computed."""


def _parse(line: str, number: int, path: Path, flag: str = "--output") -> dict:
    """One record of a result file: an object with an ``id``; else one OutputError naming the line."""
    fix = f"the file is damaged: delete that line to keep the other results, or {restart_hint(flag)}"
    return read_json_line(line, RECORD, f"{path}, line {number}", fix, error=OutputError)


def _has_records(path: Path) -> bool:
    return bool(path.read_text(encoding="utf-8", errors="replace").strip())


def _differences(recorded: dict, current: dict, prefix: str = "") -> list[str]:
    """``key: recorded -> current`` for every setting that changed, nested keys dotted.

    A hub model's ``revision`` unknown then (the first run downloaded it) and known now is no change.
    """
    changes = []
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changes += _differences(old, new, f"{prefix}{key}.")
        elif key == "revision" and old is None:
            continue
        elif old != new:
            changes.append(f"{prefix}{key}: {json.dumps(old)} then, {json.dumps(new)} now")
    return changes


def _prepare_folder(path: Path, flag: str) -> None:
    """Create the output's folder; a path that cannot hold a file is an OutputError naming the fix."""
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give a file name for {flag}")
    try:
        check_writable(path, path.parent)
        path.parent.mkdir(parents=True, exist_ok=True)
    except ValueError as error:
        raise OutputError(f"{error}; choose another {flag}") from None
    except OSError as error:
        raise OutputError(f"cannot create the folder of {path}: {error.strerror}; choose another {flag}") from None


def check_writable(path: Path, folder: Path) -> None:
    """Raise ValueError unless ``folder`` (where ``path`` goes) exists or can be created, and accepts new files;
    nothing is left behind."""
    existing = next(p for p in [folder, *folder.parents] if p.exists())
    if not existing.is_dir():
        raise ValueError(f"cannot write {path}: {existing} is a file, not a folder")
    try:  # by trying: os.access says yes to root on a read-only mount, and /proc refuses any new file
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as error:
        raise ValueError(f"cannot write {path}: {existing} refuses new files ({error.strerror})") from None
