"""What the corpus loaders share: the split they return, strict JSON reading, the history cut."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from ...errors import InputError
from ..rows import Row


class CorpusSplit(list):
    """The rows of one corpus split, and ``summary``: where they came from and how many turns were kept or skipped.

    Otherwise a plain list of :class:`~faithkit.data.rows.Row` (a slice is a plain list).
    Every summary has ``corpus``, ``split``, ``source``, ``turns`` (the candidate response
    turns) and ``kept``; each ``skipped_<reason>`` counts the turns left out for that reason,
    so ``kept`` plus the skips is ``turns``.
    """

    def __init__(self, rows: list[Row], summary: dict):
        super().__init__(rows)
        self.summary = summary


def read_json(path: Path, what: str, source: str, top: type) -> dict | list:
    """The JSON value of ``path``, which must be a ``top`` (dict or list); else an InputError saying where to get it."""
    if not path.is_file():
        raise InputError(f"{path} not found: expected {what}. Get it from {source}")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path} is not valid JSON ({error}): expected {what}. Get it from {source}") from None
    if not isinstance(value, top):
        raise InputError(f"{path} holds a JSON {type(value).__name__}, not a {top.__name__}: expected {what}. "
                         f"Get it from {source}")
    return value


@contextmanager
def layout_of(path: Path, what: str, source: str):
    """Report a missing field or a value of the wrong type met while walking ``path``'s data as an InputError."""
    try:
        yield
    except KeyError as error:
        raise InputError(f"{path}: missing field {error}: expected {what}. Get it from {source}") from None
    except (TypeError, AttributeError, IndexError) as error:
        raise InputError(f"{path}: unexpected structure ({error}): expected {what}. Get it from {source}") from None


def last_turns(turns: list, history_turns: int | None) -> list[str]:
    """The last ``history_turns`` turns as plain strings (``None``: all of them)."""
    if history_turns is None:
        return [str(turn) for turn in turns]
    return [str(turn) for turn in turns[-history_turns:]] if history_turns else []
