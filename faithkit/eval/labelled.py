"""The leaderboard's labels: each row's label column read as 0/1 (by ``--positive``) or as graded numbers, and its
group (``--group-by``); a label the leaderboard cannot use is one InputError saying what to give instead."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data import Row
from ..errors import InputError
from .labels import without_missing_labels

logger = logging.getLogger(__name__)


@dataclass
class Labelled:
    """The rows that have a label: 0/1 by ``--positive`` (or graded numbers), and each row's group (None without
    ``--group-by``)."""

    rows: list[Row]
    labels: np.ndarray
    groups: list[str] | None = None
    graded: bool = False
    """Labels are numbers on a scale (no ``--positive``): Spearman and Kendall instead of AUROC and F1."""


def label_rows(
    rows: Sequence[Row], label_column: str, positive: str | None, group_by: str | None = None, strict: bool = False
) -> Labelled:
    """Each readable row's 0/1 label, or without ``positive`` its graded label (a number); an unknown column, a
    ``positive`` no row has, one class only or a graded label that is no number is an InputError.

    A label matches ``positive`` when its text (a JSON value as JSON writes it: ``true``, ``1``) equals it. Rows
    that cannot be read or have no label (NaN, infinity, empty, null: :mod:`.labels`) are left out, with a warning;
    with ``strict`` a row without a label is an InputError.
    """
    readable = [row for row in rows if not row.error]
    if not readable:
        raise InputError(f"no row of the input can be read ({rows[0].error if rows else 'it is empty'})")
    if len(readable) < len(rows):
        first = next(row.error for row in rows if row.error)
        logger.warning("%d rows cannot be read and are left out (the first: %s)", len(rows) - len(readable), first)
    columns = sorted({column for row in readable for column in row.extras})
    for column, flag in ((label_column, "--label-column"), (group_by, "--group-by")):
        if column is not None and column not in columns:
            raise InputError(f"{flag} '{column}' is not a column of the input holding labels; {_columns_hint(columns)}")
    kept = without_missing_labels(
        readable, lambda row: row.extras.get(label_column), f"column '{label_column}'", lambda row: row.id, strict
    )
    values = [_label_text(row.extras[label_column]) for row in kept]
    groups = [_label_text(row.extras.get(group_by)) or "(none)" for row in kept] if group_by else None
    if positive is None:
        return Labelled(kept, _graded(values, kept, label_column), groups, graded=True)
    positive = positive.strip()  # as the labels are read
    seen = sorted(set(values))
    if positive not in seen:
        raise InputError(
            f"--positive '{positive}': no row has it in column '{label_column}', whose values are "
            f"{_listed(seen)}; give one of them"
        )
    if len(seen) == 1:
        raise InputError(
            f"every row of column '{label_column}' is '{positive}', so there is no negative class to "
            f"tell apart; a leaderboard needs rows of both classes"
        )
    return Labelled(kept, np.array([value == positive for value in values], dtype=int), groups)


def _columns_hint(columns: list[str]) -> str:
    """The columns a label can come from; the document, history, response and id columns are read as those."""
    read = "the document, history, response and id columns are read as such"
    if not columns:
        return f"the input has no other column ({read}): add a label column"
    return f"its other columns are {', '.join(repr(column) for column in columns)} ({read})"


def _graded(values: list[str], rows: list[Row], label_column: str) -> np.ndarray:
    """Graded labels as numbers; one that is none, or all alike, is an InputError saying what to do."""
    numbers = []
    for value, row in zip(values, rows):
        try:
            numbers.append(float(value))
        except ValueError:
            raise InputError(
                f"row {row.id}: label '{value}' in column '{label_column}' is no number; without --positive the "
                f"labels are graded (numbers on a scale): give --positive for the positive class of categories"
            ) from None
    if len(set(numbers)) < 2:
        raise InputError(f"every row of column '{label_column}' has the label {values[0]}: nothing to correlate with")
    return np.array(numbers)


def _label_text(value) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else json.dumps(value)


def _listed(values: list[str], most: int = 10) -> str:
    shown = ", ".join(f"'{v}'" for v in values[:most])
    return shown + (f" and {len(values) - most} more" if len(values) > most else "")
