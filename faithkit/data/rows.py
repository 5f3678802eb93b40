"""Rows in, results out: one schema for every job, and output files that resume.

A row is ``{"id", "document", "history" (list of turns), "response", **extras}``. Files
are JSONL, CSV or TSV; column names are configurable and the benchmark layouts are
recognised (BEGIN and Q² WoW use ``knowledge`` / ``message`` / ``response``).

Bad rows are never dropped silently and never crash a job: :func:`read_rows` yields them
with an ``error`` naming the row and the field, and jobs write that error to the output
in place of a score.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from collections.abc import Iterable, Iterator

from ..errors import InputError
from ..settings.options import option
from .arrow import dataset_records, is_dataset_source
from .results import content_digest

csv.field_size_limit(sys.maxsize)
logger = logging.getLogger(__name__)

FIELD_ALIASES = {
    "document": ("document", "knowledge", "doc", "grounding", "passage"),
    "history": ("history", "message", "context", "dialog_history"),
    "response": ("response", "generated_response", "prediction", "hypothesis"),
    "id": ("id", "row_id", "example_id"),
}


@dataclass
class Columns:
    """Which input column holds each field; ``None`` means "find it by its usual names".

    ``naming`` ends the error for a missing column: how this caller's user names one (``{field}`` is
    replaced by the field's name); the command line has flags, a training config does not.
    """

    document: str | None = None
    history: str | None = None
    response: str | None = None
    id: str | None = None
    required: tuple[str, ...] = ("document", "response")
    naming: str = "Name it with Columns({field}=...), or leave {field} out of Columns(required=...)."

    def resolve(self, header: Iterable[str], source: str) -> dict[str, str | None]:
        header = list(header)
        mapping: dict[str, str | None] = {}
        for name in ("document", "history", "response", "id"):
            chosen = getattr(self, name)
            if chosen is not None:
                if chosen not in header:
                    raise InputError(f"{source}: column '{chosen}' (given for {name}) not found; columns are {header}")
                mapping[name] = chosen
                continue
            mapping[name] = next((alias for alias in FIELD_ALIASES[name] if alias in header), None)
            if mapping[name] is None and name in self.required:
                raise InputError(
                    f"{source}: no column for '{name}'; looked for {list(FIELD_ALIASES[name])} among {header}. "
                    + self.naming.format(field=name)
                )
        return mapping


@dataclass
class Row:
    id: str
    document: str = ""
    history: list[str] = field(default_factory=list)
    response: str = ""
    extras: dict = field(default_factory=dict)
    error: str | None = None
    line: int | None = field(default=None, compare=False)
    """Where the row starts in its text file (messages name it); None for rows of a dataset."""

    def digest(self) -> str:
        """A hash of the row as read (every field its record copies), so a resumed job notices an edited row."""
        return content_digest([self.id, self.document, self.history, self.response, self.extras, self.error])


REFERENCE_COLUMNS = ("gold", "reference")
"""Columns that hold a row's reference response, before its ``response`` column."""


def reference_of(row: Row) -> str | None:
    """The row's reference response (what relevance is measured against) when it is to be answered: a
    ``gold``/``reference`` column, else its ``response`` column; None when it has none."""
    return gold_of(row) or row.response or None


def gold_of(row: Row, column: str | None = None) -> str | None:
    """The reference response beside a row's own response (what scoring that response for relevance compares it
    with): the ``column`` named, else a ``gold``/``reference`` column (generate and rerank outputs have ``gold``);
    None when empty or absent."""
    for name in (column,) if column else REFERENCE_COLUMNS:
        value = row.extras.get(name)
        if value not in (None, ""):
            return str(value)
    return None


def _split_history(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(turn) for turn in value]
    text = str(value)
    if text.startswith("[") and text.endswith("]"):  # a JSON list stored in a CSV cell
        try:
            turns = json.loads(text)
            if isinstance(turns, list):
                return [str(turn) for turn in turns]
        except json.JSONDecodeError:
            pass
    return [text] if text else []


QUOTING: dict[str, Literal[0, 1, 2, 3]] = {"none": csv.QUOTE_NONE, "csv": csv.QUOTE_MINIMAL}
"""How CSV/TSV fields are quoted: ``none`` reads every character literally (BEGIN's TSVs hold bare
quotes), ``csv`` lets a quoted field hold the delimiter, quotes and newlines. Default: ``none``
for .tsv, ``csv`` for .csv."""


@dataclass(frozen=True)
class InputOptions:
    """How a command reads its rows file: the columns (found by their usual names when not given), the split and
    the CSV quoting; each command's input flags and the sweep's config keys are these fields."""

    document_column: str | None = option(None, "column with the grounding document (unset: document/knowledge/…)")
    history_column: str | None = option(
        None,
        "column with the history: a string or a JSON list of turns (unset: history/message/…; none: empty histories)",
    )
    response_column: str | None = option(None, "column with the response (unset: response/…)")
    id_column: str | None = option(None, "column with a unique row id (unset: id, else the line number)")
    split: str | None = option(
        None, "the split to read from a hub dataset (--input hf:OWNER/NAME) or a saved DatasetDict folder"
    )
    quoting: str | None = option(
        None,
        "CSV/TSV quoting: 'csv' lets quoted fields hold delimiters and newlines, 'none' reads every character "
        "literally (unset: none for .tsv, as BEGIN needs; csv for .csv)",
        choices=tuple(QUOTING),
    )


def _records(path: Path, quoting: str | None) -> Iterator[tuple[int, int, dict | None, str | None]]:
    """(row number, line, record, error) for each data row; undecodable bytes and ragged rows become errors.

    A JSONL row's number is its line; a CSV/TSV row's counts data rows from 1 (the header
    excluded); ``line`` is where the row starts in the file.
    """
    raw = path.read_bytes().decode("utf-8", errors="surrogateescape").removeprefix("\ufeff")  # a BOM is no text
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        for number, line in enumerate(raw.split("\n"), start=1):  # not splitlines: U+2028 may sit inside a string
            if not line.strip():
                continue
            if _has_bad_bytes(line):
                yield number, number, None, f"line {number} is not valid UTF-8"
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                yield number, number, None, f"line {number} is not valid JSON ({error.msg})"
                continue
            if not isinstance(record, dict):
                yield number, number, None, f"line {number} is not a JSON object"
                continue
            yield number, number, record, None
    elif suffix in (".csv", ".tsv"):
        delimiter = "\t" if suffix == ".tsv" else ","
        quoting = quoting or ("none" if suffix == ".tsv" else "csv")
        if quoting not in QUOTING:
            raise InputError(f"unknown quoting '{quoting}'; use one of {', '.join(QUOTING)}")
        reader = csv.reader(io.StringIO(raw, newline=""), delimiter=delimiter, quoting=QUOTING[quoting])
        header = next(reader, None)
        if header is None:
            return
        start, number, lines = reader.line_num + 1, 0, raw.count("\n") + (not raw.endswith("\n"))
        for fields in reader:
            line, start = start, reader.line_num + 1  # a quoted field may span lines: report its first
            if reader.line_num >= lines and quoting == "csv":
                _check_quote_closes(raw, line, delimiter, path)
            if not fields:
                continue
            number += 1  # rows count from 1 after the header, as the benchmark files' ids do
            if len(fields) != len(header):
                yield (
                    number,
                    line,
                    None,
                    (
                        f"line {line} has {len(fields)} fields where the header has {len(header)}"
                        + _quoting_hint(quoting)
                    ),
                )
                continue
            yield number, line, dict(zip(header, fields)), None
    else:
        raise InputError(f"{path}: unknown file type '{suffix}'; use .jsonl, .csv, .tsv or .parquet")


def _check_quote_closes(raw: str, line: int, delimiter: str, path: Path) -> None:
    """Stop if the file's last row, which starts at ``line``, opens a quote that never closes: that quote would
    have swallowed every line after it into one field (a quoted field that does close may hold newlines)."""
    tail = "\n".join(raw.split("\n")[line - 1 :])  # lines as the csv reader counts them (not U+2028)
    try:
        for _ in csv.reader(io.StringIO(tail, newline=""), delimiter=delimiter, strict=True):
            pass
    except csv.Error as error:
        if "unexpected end of data" not in str(error):
            return
        swallowed = tail.count("\n") - tail.endswith("\n")
        lost = f", so the {swallowed} lines after it would be read into that one field" if swallowed else ""
        raise InputError(
            f"{path}: line {line} opens a quoted field that never closes{lost}; close the quote, or "
            f"read the file literally with --quoting none"
        ) from None


def _quoting_hint(quoting: str) -> str:
    if quoting == "none":
        return "; if quoted fields hold tabs, commas or newlines, read the file with --quoting csv"
    return "; check the quoting of that line (or read the file literally with --quoting none)"


def _has_bad_bytes(text: str) -> bool:
    """Undecodable bytes (kept as surrogate escapes) or a lone surrogate from JSON's \\ud800: not encodable text."""
    if text.isascii():
        return False
    try:  # strict UTF-8 refuses exactly the surrogates, at C speed (a 50 MB document: ms, not a minute)
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def has_bad_text(value) -> bool:
    """Whether a string anywhere in a field's value (list items, object keys too) cannot be written as UTF-8."""
    if isinstance(value, str):
        return _has_bad_bytes(value)
    if isinstance(value, list):
        return any(has_bad_text(item) for item in value)
    if isinstance(value, dict):
        return any(has_bad_text(key) or has_bad_text(item) for key, item in value.items())
    return False


def read_rows(
    path, columns: Columns | None = None, quoting: str | None = None, split: str | None = None
) -> Iterator[Row]:
    """Yield every data row of a JSONL/CSV/TSV file or a dataset; rows that cannot be used carry ``error``.

    ``path`` is a file, a dataset folder or hub id (below) or a ``datasets.Dataset``.

    Rows without an id get their row number as id (see :func:`_records`), or ``line-<n>`` (the
    file line where the row starts) when the file has an id column, so that they cannot collide
    with real ids. ``quoting`` is ``none`` or ``csv`` (see :data:`QUOTING`). A Parquet file, a
    ``save_to_disk`` folder or a hub dataset ``hf:OWNER/NAME`` (with ``split``) is read by
    :mod:`.arrow`, each record as a JSONL line.
    """
    path, records = _source_records(path, quoting, split)
    columns = columns or Columns()
    mapping = None
    pending: list[tuple[int, int, str]] = []  # rows that failed before the header was known
    for number, line, record, error in records:
        if record is not None and mapping is None:
            mapping = columns.resolve(record.keys(), str(path))
            if mapping["history"] is None:
                logger.warning(
                    "%s: no history column found, so every history is empty (name one with --history-column)", path
                )
            yield from (Row(id=_fallback_id(n, at, mapping), error=e) for n, at, e in pending)
            pending = []
        if error is not None:
            if mapping is None:
                pending.append((number, line, error))
            else:
                yield Row(id=_fallback_id(number, line, mapping), error=error, line=line)
            continue
        assert record is not None and mapping is not None  # a row without an error has a record, so a mapping
        given_id = record.get(mapping["id"]) if mapping["id"] else None
        unusable = given_id in (None, "") or has_bad_text(given_id)
        row_id = _fallback_id(number, line, mapping) if unusable else str(given_id)
        row = _row(record, mapping, row_id, columns.required)
        row.line = line
        yield row
    if mapping is None:
        raise InputError(f"{path} has no data rows" + (f" ({pending[0][2]})" if pending else ""))


def _source_records(path, quoting: str | None, split: str | None) -> tuple[str | Path, Iterator]:
    """How messages name the input, and its records as ``(row number, line, record or None, error or None)``."""
    if is_dataset_source(path):
        return (path if isinstance(path, (str, Path)) else "dataset"), dataset_records(path, split)
    path = Path(path)
    if split is not None:
        raise InputError(f"{path}: --split applies to hub datasets and saved DatasetDict folders; drop it")
    if not path.exists():
        raise InputError(f"input file not found: {path}")
    if path.is_dir():
        raise InputError(
            f"input {path} is a folder; give a .jsonl, .csv, .tsv or .parquet file or a save_to_disk folder"
        )
    return path, _records(path, quoting)


def _fallback_id(number: int, line: int, mapping: dict) -> str:
    return f"line-{line}" if mapping["id"] else str(number)


def _row(record: dict, mapping: dict, row_id: str, required: tuple[str, ...]) -> Row:
    for column, value in record.items():  # every field is written to the output, not only the three used
        if has_bad_text(column) or has_bad_text(value):
            column = column.encode("utf-8", "backslashreplace").decode("utf-8")  # the message itself must be writable
            return Row(
                id=row_id,
                error=f"row {row_id}: field '{column}' is not valid UTF-8 text "
                f"(undecodable bytes or a lone surrogate such as \\ud800); fix the file",
            )
    values = {
        name: record.get(mapping[name]) if mapping[name] else None for name in ("document", "history", "response")
    }
    for name, value in values.items():
        turns = value if name == "history" and isinstance(value, list) else [value]
        if any(isinstance(turn, (list, dict, bool)) for turn in turns):  # JSON's true is no text "True"
            expected = "a string or a list of strings (the turns)" if name == "history" else "a string"
            return Row(
                id=row_id,
                error=f"row {row_id}: field '{mapping[name]}' ({name}) holds "
                f"{json.dumps(value, ensure_ascii=False)[:60]} where {expected} is expected; "
                f"fix the file",
            )
    history = _split_history(values["history"])
    document = "" if values["document"] is None else str(values["document"])
    response = "" if values["response"] is None else str(values["response"])
    used = {column for column in mapping.values() if column}
    extras = {key: value for key, value in record.items() if key not in used and key}
    row = Row(id=row_id, document=document, history=history, response=response, extras=extras)
    for name in required:
        if name == "history":
            continue  # an empty history is a legitimate first turn
        if not getattr(row, name).strip():
            row.error = f"row {row_id}: field '{mapping[name]}' ({name}) is empty"
            break
    return row


def unique_ids(rows: list[Row]) -> None:
    """Row ids key resumption, so they must be unique; raise naming the first duplicate and where both rows are."""
    seen: dict[str, tuple[int, Row]] = {}
    for position, row in enumerate(rows, start=1):
        if row.id in seen:
            first_position, first = seen[row.id]
            where = (
                f"on lines {first.line} and {row.line}"
                if first.line and row.line
                else f"in rows {first_position} and {position}"
            )
            raise InputError(
                f"row id '{row.id}' appears twice, {where}; ids must be unique (use --id-column or drop the id column)"
            )
        seen[row.id] = position, row
