"""Files faithkit reads back (a sweep's ``best.json``, …) checked against the shape faithkit wrote them in.

A hand-edited file would otherwise fail deep inside the code that uses it (``KeyError: 'alpha'``).
:func:`read_json_file` reads one and checks it against a schema built from the pieces below; a
mismatch is one :class:`~faithkit.errors.InputError` naming the file, the path to the field
(``by_strategy.pmi.alpha``) and what was expected, then the fix:

    PICK = Object({"strategy": TEXT, "search": TEXT})
    best = read_json_file(path, Object({"by_strategy": MapOf(PICK)}), fix="give the best.json of a finished sweep")
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import FaithkitError, InputError


class SchemaMismatch(Exception):
    """Where (``path``) a value differs from its schema, and what was ``expected`` there."""

    def __init__(self, path: str, expected: str, value=None, missing: bool = False):
        super().__init__(path)
        self.path, self.expected, self.value, self.missing = path, expected, value, missing

    def describe(self) -> str:
        if self.missing:
            return f"{self.path} is missing (expected {self.expected})"
        shown = json.dumps(self.value, ensure_ascii=False, default=str)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{self.path or 'the top level'} is {shown} where {self.expected} is expected"


class Schema:
    """What a JSON value must be: :meth:`check` raises :class:`SchemaMismatch` at the first difference."""

    expected = "a value"

    def check(self, value, path: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Kind(Schema):
    """A JSON scalar of one of ``types`` (booleans are never numbers)."""

    types: tuple[type, ...]
    expected: str = "a value"

    def check(self, value, path: str) -> None:
        if isinstance(value, bool) and bool not in self.types or not isinstance(value, self.types):
            raise SchemaMismatch(path, self.expected, value)


TEXT = Kind((str,), "text")
NUMBER = Kind((int, float), "a number")
WHOLE = Kind((int,), "a whole number")
BOOLEAN = Kind((bool,), "true or false")
ID = Kind((str, int), "a row id (text or a whole number)")
NUMBER_OR_NULL = Kind((int, float, type(None)), "a number or null")


@dataclass(frozen=True)
class Object(Schema):
    """A JSON object with at least the keys of ``fields``, each matching its schema, and the keys of ``optional``
    that it has matching theirs (other keys are free)."""

    fields: dict[str, Schema]
    expected: str = "an object"
    optional: dict[str, Schema] = field(default_factory=dict)

    def check(self, value, path: str) -> None:
        if not isinstance(value, dict):
            raise SchemaMismatch(path, self.expected if self.fields else "an object", value)
        for key, schema in {**self.fields, **self.optional}.items():
            where = f"{path}.{key}" if path else key
            if key in value:
                schema.check(value[key], where)
            elif key in self.fields:
                raise SchemaMismatch(where, schema.expected, missing=True)


@dataclass(frozen=True)
class ListOf(Schema):
    """A JSON list whose every item matches ``items`` (an item's path is ``field[index]``)."""

    items: Schema
    expected: str = "a list"

    def check(self, value, path: str) -> None:
        if not isinstance(value, list):
            raise SchemaMismatch(path, self.expected, value)
        for index, item in enumerate(value):
            self.items.check(item, f"{path}[{index}]")


@dataclass(frozen=True)
class MapOf(Schema):
    """A JSON object whose every value matches ``values`` (keys are names: strategies, systems)."""

    values: Schema
    expected: str = "an object of named entries"

    def check(self, value, path: str) -> None:
        if not isinstance(value, dict):
            raise SchemaMismatch(path, self.expected, value)
        for key, item in value.items():
            self.values.check(item, f"{path}.{key}" if path else key)


def check_schema(
    value, schema: Schema, source: str | Path, fix: str, path: str = "", error: type[FaithkitError] = InputError
) -> None:
    """:meth:`Schema.check` of ``value`` (read from ``source``, e.g. ``"rows.jsonl, line 3"``; ``path`` where in
    it), a mismatch as one ``error`` (an InputError unless a command's own kind fits better) ending with ``fix``."""
    try:
        schema.check(value, path)
    except SchemaMismatch as mismatch:
        raise error(f"{source}: {mismatch.describe()}; {fix}") from None


def read_json_line(line: str, schema: Schema, source: str, fix: str, error: type[FaithkitError] = InputError):
    """One JSONL record checked against ``schema``: a line that is not JSON, or does not match, is one ``error``
    naming ``source`` (the file and line) and ending with ``fix``."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as problem:
        raise error(f"{source} is not JSON ({problem.msg}); {fix}") from None
    check_schema(value, schema, source, fix, error=error)
    return value


def read_json_file(path: str | Path, schema: Schema, fix: str, error: type[FaithkitError] = InputError):
    """The JSON value of ``path`` checked against ``schema``: a missing, unreadable, invalid or mismatched file is
    one ``error`` naming it (and the field) and ending with ``fix``."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise error(f"{path} not found; {fix}") from None
    except OSError as problem:
        raise error(f"cannot read {path}: {problem.strerror or problem}; {fix}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as problem:
        raise error(f"{path} is not valid JSON ({problem}); {fix}") from None
    check_schema(value, schema, path, fix, error=error)
    return value
