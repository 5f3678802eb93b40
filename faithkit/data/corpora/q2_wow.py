"""The Q² paper's annotated Wizard-of-Wikipedia responses (Honovich et al. 2021).

Two CSV files, ``q2_wow/dodeca_consistent.csv`` and ``dodeca_inconsistent.csv`` (columns
``knowledge``, ``message``, ``response``, ``gold``): every response of the first is
consistent with its knowledge, every response of the second is not. Row ids are
``consistent:<n>`` / ``inconsistent:<n>``, n counting data lines from 1.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ..rows import Row, read_rows

SETS = {"consistent": 1, "inconsistent": 0}  # set name: label (1 = consistent, the positive class)


def load_q2_wow(path: str | Path, set_name: str, limit: int | None = None) -> list[Row]:
    """The rows of one Q² WoW CSV, ids prefixed by ``set_name``; ``limit`` keeps the first rows."""
    rows: list[Row] = []
    for row in read_rows(path):
        if limit is not None and len(rows) >= limit:
            break
        row.id = f"{set_name}:{row.id}"
        rows.append(row)
    return rows


def set_of(record_id: str) -> str:
    """Which set (``consistent`` / ``inconsistent``) a scores.jsonl id belongs to."""
    name = str(record_id).split(":", 1)[0]
    if name not in SETS:
        raise InputError(
            f"record id {record_id!r} does not start with 'consistent:' or 'inconsistent:'; "
            f"is this a scores.jsonl written by meta-eval q2-wow?"
        )
    return name
