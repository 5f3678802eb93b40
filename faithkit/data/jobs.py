"""Long jobs over files of rows, resumable and data-parallel, never losing or repeating a row.

``faithkit score``, ``generate``, the meta-evaluations and the sweep all run :func:`run_job`:

* rows already in the output (written by the same job: see :class:`~faithkit.data.ResultWriter`'s
  fingerprint, from the same row: see its ``row_digest``) are skipped, rows edited since are
  computed again, bad rows get an ``error`` record, the rest are computed in chunks
  (so prefix sharing and batching see many rows at once) and written as each chunk finishes;
* chunks shrink when rows are slow, so results reach the file at least every
  ``flush_seconds`` (one row that alone takes longer is the only exception);
* progress is a bar on a terminal and a plain log line every ``flush_seconds`` otherwise;
* results are flushed record by record and synced to the disk once per chunk (the crash
  guarantee is in :mod:`faithkit.data.results`);
* Ctrl-C or SIGTERM stops with :class:`JobInterrupted` (the file holds every finished row);
* when done, the output lists the rows in input order.

Under ``accelerate launch`` (``WORLD_SIZE`` > 1) each process takes every n-th remaining row
and writes its own part file ``OUT.part<rank>``; the main process merges the parts into the
output (also leftovers of an interrupted run, on the next start), so resuming works with any
number of processes and the output is the one a single process writes.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterator, Mapping, Sequence

from tqdm.auto import tqdm

if TYPE_CHECKING:
    from accelerate import PartialState

from . import ResultWriter, Row, read_results
from .results import DIGEST_KEY
from ..errors import FaithkitError

logger = logging.getLogger(__name__)

FIRST_CHUNK = 8
"""Rows in the first chunk, before the job knows how long a row takes."""


class JobInterrupted(FaithkitError):
    """Ctrl-C during a job; the message says how many rows are safe in the output and how to continue."""


def job_fingerprint(command: str, **settings) -> dict:
    """What produced an output: the command, its settings (models as :func:`faithkit.serving.models.identity`) and faithkit's version."""
    from .. import __version__

    return {"command": command, "faithkit": __version__, **{k: v for k, v in settings.items() if v is not None}}


def score_rows(
    metric,
    rows: Sequence[Row],
    output: str | Path,
    fingerprint: dict | None = None,
    references: Mapping[str, str] | None = None,
    **options,
) -> dict:
    """Score every row with ``metric.compute_rows`` into ``output``; options and counts as :func:`run_job`.

    ``references`` (row id: reference response) go to the metric with the rows that have one (relevance); the
    rows without one are scored without."""

    def columns(chunk: list[Row]) -> list:
        return [[r.document for r in chunk], [r.history for r in chunk], [r.response for r in chunk]]

    def compute(chunk: list[Row]) -> list[dict]:
        if references is None:
            return metric.compute_rows(*columns(chunk))
        given = [r for r in chunk if r.id in references]
        lacking = [r for r in chunk if r.id not in references]
        results: dict[str, dict] = {}
        if given:
            scored = metric.compute_rows(*columns(given), [references[r.id] for r in given])
            results.update(zip((r.id for r in given), scored))
        if lacking:
            results.update(zip((r.id for r in lacking), metric.compute_rows(*columns(lacking))))
        return [results[r.id] for r in chunk]

    # rows under one document land in one chunk, where the scorer computes the document once
    return run_job(compute, rows, output, fingerprint=fingerprint, order=lambda row: row.document, **options)


@dataclass
class Process:
    """This process's place among the processes ``accelerate launch`` started (rank 0 of 1 otherwise)."""

    rank: int = 0
    world: int = 1
    state: PartialState | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def wait(self) -> None:
        if self.state is not None:
            self.state.wait_for_everyone()


def is_main_process() -> bool:
    """Whether this is the main process of ``accelerate launch`` (rank 0) or the only one: the process that logs
    progress and prints results. Read from the launcher's ``RANK``, so it imports neither torch nor accelerate."""
    return int(os.environ.get("RANK", "0")) == 0


def current_process() -> Process:
    """This process's place under ``accelerate launch`` (one process otherwise)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Process()
    import torch
    from accelerate import PartialState

    # without a GPU, accelerate only joins the processes when told they run on CPU (gloo)
    state = PartialState(cpu=not torch.cuda.is_available())
    return Process(state.process_index, state.num_processes, state)


@dataclass(frozen=True)
class JobOptions:
    """How a job treats what its output already holds and how often it writes: the options every command that runs
    :func:`run_job` exposes as flags (``--restart``, ``--skip-errors``, ``--chunk-size``)."""

    restart: bool = False  # discard an existing output and start over
    retry_errors: bool = True  # compute the rows of earlier error records again (False: keep those records)
    chunk_size: int = 64  # rows computed together, at most (fewer when rows are slow)
    flush_seconds: float = 30.0  # results reach the file at least this often

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {self.chunk_size}")


def run_job(
    compute: Callable[[list[Row]], list[dict]],
    rows: Sequence[Row],
    output: str | Path,
    *,
    fingerprint: dict | None = None,
    desc: str = "rows",
    order: Callable[[Row], object] | None = None,
    flag: str = "--output",
    **options,
) -> dict:
    """Run ``compute`` on the rows not yet in ``output``; return ``{"done", "skipped", "errors", "retried", "changed"}``.

    ``compute`` takes a list of rows and returns one result dict per row; a chunk that raises
    ValueError/TypeError is rerun row by row so that only the bad row gets an error record.
    ``order`` may regroup rows for speed (records carry their row id, and the finished file is
    put back in input order). Records whose row was edited since (``changed``) are computed
    again. ``options`` are the fields of :class:`JobOptions`. ``flag`` is the command's option
    for ``output``, which messages name.
    """
    job = JobOptions(**options)
    process = current_process()
    output = Path(output)
    with shared_outputs(
        {output: output},
        {output: {row.id: row.digest() for row in rows}},
        fingerprint=fingerprint,
        restart=job.restart,
        retry_errors=job.retry_errors,
        flag=flag,
    ) as shared:
        done = shared.done[output]
        todo = [row for row in rows if row.id not in done][process.rank :: process.world]
        writer = shared.writers[output]
        counts = _run(compute, todo, writer, job, desc, order, shared.held.get(output, writer))
        counts["skipped"] = sum(row.id in done for row in rows) if process.is_main else 0
        counts["changed"] = shared.changed.get(output, 0)
    if process.world == 1:
        return counts
    from accelerate.utils import gather_object

    every = gather_object([counts])
    return {key: sum(c[key] for c in every) for key in counts}


@dataclass
class SharedOutputs:
    """Result files every process adds to (see :func:`shared_outputs`), by the caller's keys."""

    done: dict[object, set[str]]
    """Ids each file held when the job started: the same in every process."""
    writers: dict[object, ResultWriter]
    """Where this process writes its records."""
    held: dict[object, ResultWriter]
    """The files' own writers, held by the main process (empty in the others)."""
    changed: dict[object, int]
    """Records each file dropped because their row changed (main process; empty in the others)."""


@contextmanager
def shared_outputs(
    paths: dict,
    expected: dict[object, Mapping[str, str | None]],
    *,
    fingerprint: dict | None = None,
    restart: bool = False,
    retry_errors: bool = True,
    flag: str = "--output",
) -> Iterator[SharedOutputs]:
    """Open result files that all processes under ``accelerate launch`` add records to, as one process would.

    The main process holds each file (checks its fingerprint, takes its lock, folds in the parts an interrupted
    run left); each process writes to its own part file ``OUT.part<rank>`` (a single process: to the file itself).
    ``expected[key]`` maps the ids the file should hold, in order, to the
    :func:`~faithkit.data.results.content_digest` of what each record is made from (``None``: not checked), kept
    as its ``row_digest``: records whose digest differs are dropped (counted in a warning) to be made again; records
    of other ids stay, at the end. When all processes are done, the main process merges the parts in the order of
    ``expected[key]``, whatever the number of processes; after an error the parts stay for the next run to merge.
    Messages name ``flag``, the command's output option.
    """
    process = current_process()
    paths = {key: Path(path) for key, path in paths.items()}
    with ExitStack() as stack:
        held = {
            key: stack.enter_context(_held(path, expected[key], fingerprint, restart, retry_errors, flag))
            for key, path in (paths.items() if process.is_main else ())
        }
        process.wait()
        done = {
            key: {str(r["id"]) for r in read_results(path)} if path.exists() else set() for key, path in paths.items()
        }
        changed = {key: writer.changed for key, writer in held.items()}
        if process.world == 1:
            yield SharedOutputs(done, held, held, changed)
        else:
            with ExitStack() as parts:
                writers = {
                    key: parts.enter_context(
                        ResultWriter(part_path(path, process.rank), resume=False, fingerprint=fingerprint)
                    )
                    for key, path in paths.items()
                }
                yield SharedOutputs(done, writers, held, changed)
            process.wait()
            for key, writer in held.items():
                merge_parts(paths[key], writer, fingerprint, retry_errors=False, expected=expected[key])  # errors stay
        for key, writer in held.items():
            writer.reorder(list(expected[key]))
    process.wait()


@contextmanager
def _held(path: Path, expected, fingerprint, restart: bool, retry_errors: bool, flag: str) -> Iterator[ResultWriter]:
    """The main process's writer of one shared file: fingerprint checked, lock taken, leftover parts folded in."""
    with ResultWriter(
        path, resume=not restart, fingerprint=fingerprint, retry_errors=retry_errors, expected=expected, flag=flag
    ) as writer:
        merge_parts(path, writer, fingerprint, retry_errors, expected, discard=restart)
        _report_resumed(writer)
        yield writer


def part_path(output: Path, rank: int) -> Path:
    """The file process ``rank`` writes its share of ``output`` to."""
    return output.with_name(f"{output.name}.part{rank}")


def merge_parts(
    output: Path,
    writer: ResultWriter,
    fingerprint: dict | None,
    retry_errors: bool,
    expected: Mapping[str, str | None] | None = None,
    discard: bool = False,
) -> None:
    """Append the records of the part files ``OUT.part<rank>`` that the output lacks, then delete the parts.

    Parts left by an interrupted data-parallel run are checked like the output (the same job,
    no damaged line; a half-written last line is cut) and lose their error records when those
    are retried, and their records of changed rows; ``discard`` (a restart) deletes them unread.
    """
    for part in _parts(output):
        if not discard:
            with ResultWriter(part, fingerprint=fingerprint, retry_errors=retry_errors, expected=expected) as opened:
                writer.changed += opened.changed  # opening checks and repairs it
            for record in read_results(part):
                if not writer.done(record["id"]):
                    writer.write(record)
        for leftover in (part, part.with_name(part.name + ".meta.json"), part.with_name(part.name + ".lock")):
            leftover.unlink(missing_ok=True)


def _parts(output: Path) -> list[Path]:
    """The part files of ``output`` that processes under ``accelerate launch`` wrote (not their meta or lock files)."""
    return [
        part for part in sorted(output.parent.glob(f"{output.name}.part*")) if part.suffix not in (".json", ".lock")
    ]


def _lines(path: Path) -> int:
    with open(path, "rb") as file:
        return sum(1 for _ in file)


def _report_resumed(writer: ResultWriter) -> None:
    """Warn about records that will be made again (their row changed) and ones the input no longer has."""
    if writer.changed:
        logger.warning(
            "%s: %d rows changed since their records were written; computing them again", writer.path, writer.changed
        )
    if writer.orphans:
        shown = ", ".join(writer.orphans[:5]) + (", ..." if len(writer.orphans) > 5 else "")
        logger.warning(
            "%s: %d records have ids the input no longer has (%s); they stay, at the end of the file",
            writer.path,
            len(writer.orphans),
            shown,
        )


CUT_KEYS = {"truncated_chars": "characters before tokenising", "truncated_tokens": "tokens"}
"""What a result row says was left out of its context, for the warning: the document's characters cut before it is
tokenised (never counted in tokens: a 200,000-character document is not tokenised whole), then tokens."""
CUT_FROM = {
    "start": " from the document's start",
    "end": " from the document's end",
    "outside the windows": " outside the windows scored",
}
"""Where a row says its cut came from (``truncated_from``), as the warning says it."""


def _run(compute, rows, writer: ResultWriter, job: JobOptions, desc, order, output_writer) -> dict:
    chunk_size, flush_seconds = job.chunk_size, job.flush_seconds
    counts = {"done": 0, "skipped": 0, "errors": 0, "retried": output_writer.retried}
    todo = []
    for row in rows:
        if row.error:
            _write_error(writer, row, row.error, counts)
        else:
            todo.append(row)
    if order is not None:
        todo.sort(key=order)
    progress = _Progress(len(todo), desc, flush_seconds)
    size, start = min(chunk_size, FIRST_CHUNK), 0
    try:
        while start < len(todo):
            chunk = todo[start : start + size]
            began = time.monotonic()
            for row, result in zip(chunk, compute_isolating_failures(compute, chunk)):
                if isinstance(result, Exception):
                    _write_error(writer, row, f"row {row.id}: {result}", counts)
                    continue
                writer.write(row_record(row, result))
                counts["done"] += 1
                cut = [f"{result[key]} {unit}" for key, unit in CUT_KEYS.items() if result.get(key)]
                if cut:
                    where = CUT_FROM.get(result.get("truncated_from"), "")
                    logger.warning("row %s: context cut by %s%s to fit the model", row.id, " and ".join(cut), where)
            writer.sync()  # once per chunk: see the crash guarantee in faithkit.data.results
            start += len(chunk)
            progress.update(len(chunk))
            per_row = (time.monotonic() - began) / len(chunk)
            size = max(1, min(chunk_size, int(flush_seconds / per_row) if per_row > 0 else chunk_size))
        writer.sync()
    except KeyboardInterrupt:
        writer.sync()
        parts = sum(_lines(part) for part in _parts(output_writer.path))
        where = " and its part files (merged on the rerun)" if parts else ""
        raise JobInterrupted(
            f"interrupted: {output_writer.count() + parts} rows are in {output_writer.path}{where}; "
            f"rerun the same command to continue"
        ) from None
    finally:
        progress.close()
    return counts


class _Progress:
    """A bar on a terminal; elsewhere (logs, CI, nohup) a plain line at most every ``seconds``."""

    def __init__(self, total: int, desc: str, seconds: float):
        self.total, self.desc, self.seconds = total, desc, seconds
        self.done, self.started, self.said = 0, time.monotonic(), time.monotonic()
        self.bar = tqdm(total=total, desc=desc, unit="row") if sys.stderr.isatty() and total else None

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        now = time.monotonic()
        if now - self.said >= self.seconds or self.done == self.total:
            self.said = now
            rate = self.done / max(now - self.started, 1e-9)
            left = (self.total - self.done) / rate if rate else float("inf")
            logger.info("%s: %d/%d rows, %.2f rows/s, about %.0f s left", self.desc, self.done, self.total, rate, left)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _write_error(writer: ResultWriter, row: Row, message: str, counts: dict) -> None:
    writer.write({"id": row.id, "error": message, DIGEST_KEY: row.digest()})
    counts["errors"] += 1
    logger.warning("%s", message)


def compute_isolating_failures(compute, chunk: list[Row]) -> list:
    """Run a chunk at once; if it fails, run its rows one by one so only the bad row fails.

    A :class:`FaithkitError` names a setting or input the whole job shares: it stops the job
    with its message instead of becoming every row's error.
    """
    try:
        return compute(chunk)
    except FaithkitError:
        raise
    except (ValueError, TypeError) as error:
        if len(chunk) == 1:
            return [error]
    results = []
    for row in chunk:
        try:
            results.extend(compute([row]))
        except FaithkitError:
            raise
        except (ValueError, TypeError) as error:
            results.append(error)
    return results


def row_record(row: Row, result: dict) -> dict:
    """The row's inputs beside its results and its digest; results win a name clash (a generated ``response``,
    the ``gold`` a generate record names), so no field appears twice, not even among the row's ``extras``."""
    inputs: dict[str, object] = {"document": row.document, "history": row.history, "response": row.response}
    extras = {key: value for key, value in row.extras.items() if key not in result}
    if extras:
        inputs["extras"] = extras
    return {
        "id": row.id,
        **{k: v for k, v in inputs.items() if k not in result and v != ""},
        **result,
        DIGEST_KEY: row.digest(),
    }
