"""Long jobs over files of rows: score them with a metric, resumably, never losing a row.

The command line and the meta-evaluations both run this loop: rows already in the
output are skipped, bad rows get an ``error`` record, the rest are scored in chunks (so
prefix sharing and batching see many rows at once) and written as each chunk finishes.
"""

from __future__ import annotations

import sys
from typing import Callable, Iterable

from tqdm.auto import tqdm

from .data import ResultWriter, Row


def score_rows(metric, rows: Iterable[Row], writer: ResultWriter, chunk_size: int = 64, desc: str = "scoring") -> dict:
    """Score every row not yet in ``writer`` with ``metric.compute_rows``; return the counts of :func:`run_rows`."""
    # rows under one document land in one chunk, where the scorer computes the document once
    return run_rows(lambda chunk: metric.compute_rows(*_columns(chunk)), rows, writer, chunk_size, desc,
                    order=lambda row: row.document)


def run_rows(compute: Callable[[list[Row]], list[dict]], rows: Iterable[Row], writer: ResultWriter,
             chunk_size: int, desc: str, order: Callable[[Row], object] | None = None) -> dict:
    """Run ``compute`` on chunks of the rows not yet in ``writer``; return ``{"done", "skipped", "errors"}``.

    Each record carries its row id, so ``order`` may regroup rows for speed without harming resumption.
    """
    counts = {"done": 0, "skipped": 0, "errors": 0}
    todo = []
    for row in rows:
        if writer.done(row.id):
            counts["skipped"] += 1
        elif row.error:
            _write_error(writer, row.id, row.error, counts)
        else:
            todo.append(row)
    if order is not None:
        todo.sort(key=order)
    with tqdm(total=len(todo), desc=desc, unit="row", disable=None) as bar:
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            for row, result in zip(chunk, _compute_isolating_failures(compute, chunk)):
                if isinstance(result, Exception):
                    _write_error(writer, row.id, f"row {row.id}: {result}", counts)
                else:
                    writer.write(_record(row, result))
                    counts["done"] += 1
                    if result.get("truncated_tokens"):
                        print(f"warning: row {row.id}: context cut by {result['truncated_tokens']} tokens to fit "
                              "the model; the document keeps its end", file=sys.stderr)
            bar.update(len(chunk))
    return counts


def _write_error(writer: ResultWriter, row_id: str, message: str, counts: dict) -> None:
    writer.write({"id": row_id, "error": message})
    counts["errors"] += 1
    print(f"warning: {message}", file=sys.stderr)


def _compute_isolating_failures(compute, chunk: list[Row]) -> list:
    """Run a chunk at once; if it fails, run its rows one by one so only the bad row fails."""
    try:
        return compute(chunk)
    except (ValueError, TypeError) as error:
        if len(chunk) == 1:
            return [error]
    results = []
    for row in chunk:
        try:
            results.extend(compute([row]))
        except (ValueError, TypeError) as error:
            results.append(error)
    return results


def _columns(rows: list[Row]):
    return [r.document for r in rows], [r.history for r in rows], [r.response for r in rows]


def _record(row: Row, result: dict) -> dict:
    """The row's inputs beside its results (results win a name clash, e.g. a generated ``response``)."""
    inputs = {"document": row.document, "history": row.history, "response": row.response}
    if row.extras:
        inputs["extras"] = row.extras
    return {"id": row.id, **{k: v for k, v in inputs.items() if k not in result and v != ""}, **result}
