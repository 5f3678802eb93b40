"""Reading settings: a YAML file (``faithkit sweep --config``, ``faithkit train --config``) with one-line errors,
and each value read (from YAML, a dict or the command line's text) as its field's type (:func:`coerce`)."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

from ..errors import ConfigError
from .numbers import check_finite


def read_yaml(path: str | Path, flag: str = "--config") -> object:
    """The parsed YAML of ``path`` (``yaml.safe_load``'s, but a key repeated in one mapping is refused: YAML keeps
    the last silently); a missing file, a folder, non-UTF-8 bytes or bad YAML is one ConfigError line naming the
    file (and, for bad YAML, the line and column)."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file not found: {path}; give {flag} a YAML file")
    if path.is_dir():
        raise ConfigError(f"config {path} is a folder; give {flag} a YAML file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {error.start}); give {flag} a YAML file"
        ) from None
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}") from None
    try:
        return yaml.load(text, Loader=_unique_keys_loader())  # a SafeLoader, as safe_load's
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}") from None


def _unique_keys_loader():
    """``yaml.SafeLoader`` refusing a mapping that holds a key twice (merged keys, ``<<:``, may be overridden)."""
    import yaml

    class UniqueKeysLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=deep)
                    if isinstance(key, typing.Hashable) and key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"the key '{key}' is given twice (first at line {seen[key] + 1}); keep one",
                            key_node.start_mark,
                        )
                    if isinstance(key, typing.Hashable):
                        seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeysLoader


def _without_none(annotation):
    """``X`` out of ``X | None``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return args[0]
    return annotation


def base_type(annotation):
    """The type inside ``X | None``; ``list[X]``, ``tuple[X, ...]`` and ``dict[K, V]`` give ``list``, ``tuple``,
    ``dict``."""
    inner = _without_none(annotation)
    return typing.get_origin(inner) or inner


def item_type(annotation):
    """``X`` of ``list[X]`` or ``tuple[X, ...]`` (``str`` when unsaid)."""
    return (typing.get_args(_without_none(annotation)) or (str,))[0]


def is_optional(annotation) -> bool:
    return type(None) in typing.get_args(annotation)


def coerce(value, annotation, where: str):
    """``value`` (from YAML, a dict or the command line's text) as the field's type, or a ConfigError naming it.

    Numbers may come as text (YAML reads ``1e-4`` as a string); a ``list[dict]`` or ``tuple[dict, ...]`` item may
    be a name alone (a strategy's, say); a tuple field takes a list, one value or comma-separated text.
    """
    if value is None:
        if is_optional(annotation):
            return None
        raise ConfigError(f"{where} cannot be empty; give a value or leave it out for the default")
    kind = base_type(annotation)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind) and isinstance(value, kind):
        return value  # a section already built (the sweep's generation)
    if kind is tuple:  # a list, one value, or comma-separated text as on the command line ("0,0.25,0.5")
        inner = item_type(annotation)
        parts = value if isinstance(value, (list, tuple)) else [value]
        if isinstance(value, str):
            parts = [part.strip() for part in value.split(",") if part.strip()]
        return tuple(part if inner is dict and isinstance(part, str) else coerce(part, inner, where) for part in parts)
    read = _READERS.get(kind)
    result = read(value, annotation) if read is not None else None
    if result is not None:
        if kind is float:
            check_finite(result, where)
        return result
    raise ConfigError(f"{where} must be {_expected(annotation)}, got {value!r}")


def _as_bool(value, annotation):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return text in ("true", "yes") if text in ("true", "yes", "false", "no") else None


def _as_int(value, annotation):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _as_float(value, annotation):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


_READERS = {
    bool: _as_bool,
    int: _as_int,
    float: _as_float,
    str: lambda value, annotation: value if isinstance(value, str) else None,
    list: lambda value, annotation: (
        value
        if isinstance(value, list) and all(isinstance(item, _list_item_types(annotation)) for item in value)
        else None
    ),
    dict: lambda value, annotation: value if isinstance(value, dict) else None,
}
"""How :func:`coerce` reads a value as each kind of field: the value, or None when it is not one."""


def _list_item_types(annotation) -> tuple:
    return (str, dict) if item_type(annotation) is dict else (str,)


def _expected(annotation) -> str:
    kind = base_type(annotation)
    if kind is list:
        return "a list of names or mappings" if dict in _list_item_types(annotation) else "a list of strings"
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}.get(
        kind, str(kind)
    )
