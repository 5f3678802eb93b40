"""What made an output: one record per run, built once and shown the same way in every output.

A results file that does not say which generator, which judge, which data and which settings produced it cannot be
compared with another, nor rerun. :func:`record` gathers them once per run, and every output carries that record:
JSON results embed it under ``"provenance"`` (:data:`KEY`), printed tables start with :func:`header_lines`, HTML
pages with :func:`html`, and files that have no room for it (a CSV, a JSONL of rows) get a sidecar beside them
(:func:`write_sidecar`: ``sweep.csv.provenance.json``).

The command line and the options that differ from their defaults come from the ``faithkit`` command
(:func:`note_invocation`, called by :func:`faithkit.cli.main`); called from Python, the command line is ``sys.argv``
and the options are whatever the caller passes.
"""

from __future__ import annotations

import hashlib
import html as html_text
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import __version__, redaction

KEY = "provenance"
"""The key under which JSON outputs hold the record."""

FIELDS = ("faithkit", "command", "models", "data", "options")
"""The record's keys, in the order they are shown."""

SIDECAR_SUFFIX = ".provenance.json"

_invocation: dict = {}


def note_invocation(argv: Sequence[str], options: Mapping[str, object]) -> None:
    """Remember the ``faithkit`` command line being run and its options that differ from their defaults (secrets are
    redacted on the way out, by :func:`record`)."""
    _invocation.clear()
    _invocation.update(command=shlex.join(["faithkit", *argv]), options=dict(options))


def record_options() -> dict:
    """The options of the ``faithkit`` command line being run that differ from their defaults (empty from Python)."""
    return dict(_invocation.get("options", {}))


def record(
    models: Mapping[str, object],
    data: str | Path | Sequence[str | Path] | None = None,
    options: Mapping[str, object] | None = None,
) -> dict:
    """The provenance of one run.

    ``models`` maps each role to a model name or folder (``{"generator": ..., "judge": ...}``; a metric's judge as
    ``"faith-judge": ...``), or to a served model's identity as a mapping; None values are left out. ``data`` is
    the input file(s) read. ``options`` are the settings that differ from their defaults; unset, those of the
    ``faithkit`` command line being run (:func:`note_invocation`).

    Every record goes through :func:`faithkit.redaction.redacted` here, the one way out of this module: a secret
    (an API key, a password in a server's URL) is ``***`` in every field, those added later included.
    """
    paths = [data] if isinstance(data, (str, Path)) else list(data or [])
    return redaction.redacted(
        {
            "faithkit": __version__,
            "command": _invocation.get("command") or shlex.join(sys.argv),
            "models": {
                role: dict(name) if isinstance(name, Mapping) else model_identity(name)
                for role, name in models.items()
                if name is not None
            },
            "data": [data_identity(path) for path in paths],
            "options": _plain(dict(record_options() if options is None else options)),
        }
    )


def changed_fields(settings, defaults=None) -> dict:
    """The fields of a settings dataclass (e.g. a sweep's config, read from a file and flags) that differ from their
    defaults (those of ``defaults``, an instance, when given); a nested settings dataclass by its changed fields."""
    import dataclasses

    changed = {}
    for item in dataclasses.fields(settings):
        value = getattr(settings, item.name)
        if defaults is not None:
            default = getattr(defaults, item.name)
        elif item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:  # a required field: always the caller's choice
            default = dataclasses.MISSING
        if dataclasses.is_dataclass(value) and type(value) is type(default):
            if nested := changed_fields(value, default):
                changed[item.name] = nested
        elif value != default:
            changed[item.name] = value
    return changed


def model_identity(name) -> dict:
    """A model's name with what pins it down: the offline package's version, a folder's hash or a hub revision."""
    from .models import identity

    found = identity(name)
    return found if isinstance(found, dict) else {"name": found}


def data_identity(path: str | Path) -> dict:
    """A data file (or saved dataset folder) with the sha256 of its bytes; a hub dataset by name only."""
    text = str(path)
    found = Path(text).expanduser()
    if found.is_file():
        return {"path": text, "sha256": _sha256([found])}
    if found.is_dir():
        return {"path": text, "sha256": _sha256(sorted(p for p in found.rglob("*") if p.is_file()), found)}
    return {"path": text, "sha256": None}


def _sha256(files: list[Path], root: Path | None = None) -> str:
    digest = hashlib.sha256()
    for file in files:
        if root is not None:
            digest.update(f"{file.relative_to(root)}\n".encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _plain(value):
    """Options as JSON holds them: paths and other objects as text, tuples as lists."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def header_lines(provenance: Mapping) -> list[str]:
    """The record as short lines for the top of a printed table: ``models: generator smollm2-135m (...)`` etc."""
    models = "; ".join(f"{role} {_model_text(model)}" for role, model in provenance["models"].items())
    data = "; ".join(f"{item['path']} (sha256 {str(item['sha256'])[:12]})" for item in provenance["data"])
    options = ", ".join(f"{key}={_option_text(value)}" for key, value in provenance["options"].items())
    return [
        f"faithkit {provenance['faithkit']}: {provenance['command']}",
        f"models: {models or 'none'}",
        f"data: {data or 'none'}",
        f"options differing from defaults: {options or 'none'}",
    ]


def _model_text(model: Mapping) -> str:
    pins = ", ".join(f"{key} {value}" for key, value in model.items() if key != "name" and value is not None)
    return f"{model.get('name')} ({pins})" if pins else str(model.get("name"))


def _option_text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def html(provenance: Mapping) -> str:
    """The record as an HTML block for the top of a report page (``<section class="provenance">``)."""
    lines = "".join(f"<li>{html_text.escape(line)}</li>" for line in header_lines(provenance))
    return f'<section class="provenance"><h2>Provenance</h2><ul>{lines}</ul></section>'


def sidecar_path(output: str | Path) -> Path:
    """Where the record of an output with no room for it goes: ``<output>.provenance.json`` beside it."""
    output = Path(output)
    return output.with_name(output.name + SIDECAR_SUFFIX)


def write_sidecar(output: str | Path, provenance: Mapping) -> Path:
    """Write the record beside ``output`` (:func:`sidecar_path`) and return that path."""
    from .files import write_json

    path = sidecar_path(output)
    write_json(path, {KEY: dict(provenance)})
    return path
