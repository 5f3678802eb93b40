"""What the corpus loaders share: the dataset they return, strict JSON reading, the history cut."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ...errors import InputError
from ..rows import Row


ROW_FEATURES = {"id": "string", "document": "string", "history": ["string"], "response": "string", "gold": "string"}
"""The columns every corpus has, in this order; ``gold`` repeats the response (the reference a generated one meets)."""


def corpus_dataset(rows: list[Row], summary: dict, own_features: dict):
    """The rows as a ``datasets.Dataset`` with declared features, ``summary`` kept as JSON in ``info.description``.

    ``own_features`` declares the corpus's own fields (the rows' ``extras``) as
    ``{"name": "string" | "int64" | ["string"] | [{"key": "string", ...}]}`` (a list: a
    sequence of that); a field a loader meets that is not declared keeps the type ``datasets``
    infers for it. Every summary has ``corpus``, ``split``, ``source``, ``turns`` (the candidate
    response turns) and ``kept``; each ``skipped_<reason>`` counts the turns left out for that
    reason, so ``kept`` plus the skips is ``turns``.
    """
    import datasets
    import pyarrow

    columns = {name: [getattr(row, name) for row in rows] for name in ("id", "document", "history", "response")}
    columns["gold"] = columns["response"]
    for name in dict.fromkeys(key for row in rows for key in row.extras):
        columns[name] = [row.extras.get(name) for row in rows]
    declared = {**ROW_FEATURES, **own_features}
    inferred = datasets.Dataset.from_dict({name: values for name, values in columns.items() if name not in declared})
    features = datasets.Features(
        {name: _feature(declared[name]) if name in declared else inferred.features[name] for name in columns}
    )
    info = datasets.DatasetInfo(description=json.dumps(summary), features=features)
    table = pyarrow.Table.from_pydict(columns, schema=features.arrow_schema)  # plain values: no per-row encoding
    return datasets.Dataset(table, info=info)


def _feature(kind):
    """``"string"`` -> Value, ``[kind]`` -> List of it, ``{key: kind}`` -> a struct of them."""
    import datasets

    if isinstance(kind, list):
        return datasets.List(_feature(kind[0]))
    if isinstance(kind, dict):
        return {key: _feature(value) for key, value in kind.items()}
    return datasets.Value(kind)


def corpus_summary(dataset) -> dict:
    """What :func:`corpus_dataset` recorded: where a split came from and how many turns were kept or skipped."""
    return json.loads(dataset.info.description)


JSON = TypeVar("JSON", dict, list)


def read_json(path: Path, what: str, source: str, top: type[JSON]) -> JSON:
    """The JSON value of ``path``, which must be a ``top`` (dict or list); else an InputError saying where to get it."""
    if not path.is_file():
        raise InputError(f"{path} not found: expected {what}. Get it from {source}")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{path} is not valid JSON ({error}): expected {what}. Get it from {source}") from None
    if not isinstance(value, top):
        raise InputError(
            f"{path} holds a JSON {type(value).__name__}, not a {top.__name__}: expected {what}. Get it from {source}"
        )
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
