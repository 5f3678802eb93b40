"""Long jobs over files of rows: score them with a metric, resumably, never losing a row.

The command line and the meta-evaluations both run this loop: rows already in the
output are skipped, bad rows get an ``error`` record, the rest are scored in chunks (so
prefix sharing and batching see many rows at once) and written as each chunk finishes.
"""

from __future__ import annotations

import sys
from typing import Iterable

from tqdm.auto import tqdm

from .data import ResultWriter, Row


def score_rows(metric, rows: Iterable[Row], writer: ResultWriter, chunk_size: int = 64, desc: str = "scoring") -> dict:
    """Score every row not yet in ``writer``; return counts ``{"scored", "skipped", "errors"}``."""
    rows = list(rows)
    counts = {"scored": 0, "skipped": 0, "errors": 0}
    todo = []
    for row in rows:
        if writer.done(row.id):
            counts["skipped"] += 1
        elif row.error:
            writer.write({"id": row.id, "error": row.error})
            counts["errors"] += 1
            print(f"warning: {row.error}", file=sys.stderr)
        else:
            todo.append(row)
    with tqdm(total=len(todo), desc=desc, unit="row", disable=None) as bar:
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start : start + chunk_size]
            for row, result in zip(chunk, _compute_isolating_failures(metric, chunk)):
                if isinstance(result, Exception):
                    writer.write({"id": row.id, "error": f"row {row.id}: {result}"})
                    counts["errors"] += 1
                    print(f"warning: row {row.id}: {result}", file=sys.stderr)
                else:
                    writer.write(_record(row, result))
                    counts["scored"] += 1
            bar.update(len(chunk))
    return counts


def _compute_isolating_failures(metric, chunk: list[Row]) -> list:
    """Score a chunk at once; if it fails, score its rows one by one so only the bad row fails."""
    try:
        return metric.compute_rows(*_columns(chunk))
    except (ValueError, TypeError) as error:
        if len(chunk) == 1:
            return [error]
    results = []
    for row in chunk:
        try:
            results.extend(metric.compute_rows(*_columns([row])))
        except (ValueError, TypeError) as error:
            results.append(error)
    return results


def _columns(rows: list[Row]):
    return [r.document for r in rows], [r.history for r in rows], [r.response for r in rows]


def _record(row: Row, result: dict) -> dict:
    return {"id": row.id, **result, "document": row.document, "history": row.history,
            "response": row.response, **({"extras": row.extras} if row.extras else {})}
