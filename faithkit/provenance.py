"""What made an output: one record per run, built once and shown the same way in every output.

A results file that does not say which generator, which judge, which data and which settings produced it cannot be
compared with another, nor rerun. :func:`record` gathers them once per run, and every output carries that record:
JSON results embed it under ``"provenance"`` (:data:`KEY`), printed tables start with :func:`header_lines`, HTML
pages with :func:`html`, and files that have no room for it (a CSV, a JSONL of rows) get a sidecar beside them
(:func:`write_sidecar`: ``sweep.csv.provenance.json``).

The command line, the options that differ from their defaults and the start time come from the ``faithkit`` command
(:func:`note_invocation`, called by :func:`faithkit.cli.main`); called from Python, the command line is ``sys.argv``,
the options are whatever the caller passes and the run started when faithkit was imported.

As lm-evaluation-harness's results do, a record also holds each metric's options (defaults included), the versions
of the libraries that computed it (faithkit with its git commit where it runs from a checkout), when the run started
and ended, and the machine (:func:`environment`).
"""

from __future__ import annotations

import hashlib
import html as html_text
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import __version__
from .settings import redaction

KEY = "provenance"
"""The key under which JSON outputs hold the record."""

FIELDS = (
    "faithkit",
    "command",
    "started",
    "finished",
    "models",
    "metric_options",
    "data",
    "options",
    "versions",
    "machine",
)
"""The record's keys, in the order they are shown."""

SIDECAR_SUFFIX = ".provenance.json"

LIBRARIES = ("torch", "transformers", "accelerate", "peft", "datasets", "evaluate", "tokenizers", "huggingface_hub")
"""The libraries whose versions a record names (those installed)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_invocation: dict = {"started": _now()}  # from Python: the run started when faithkit was imported


def note_invocation(argv: Sequence[str], options: Mapping[str, object]) -> None:
    """Remember the ``faithkit`` command line being run and its options that differ from their defaults (secrets are
    redacted on the way out, by :func:`record`)."""
    _invocation.clear()
    _invocation.update(command=shlex.join(["faithkit", *argv]), options=dict(options), started=_now())


def record_options() -> dict:
    """The options of the ``faithkit`` command line being run that differ from their defaults (empty from Python)."""
    return dict(_invocation.get("options", {}))


def record(
    models: Mapping[str, object],
    data: str | Path | Sequence[str | Path] | None = None,
    options: Mapping[str, object] | None = None,
    metric_options: Mapping[str, Mapping[str, object]] | None = None,
) -> dict:
    """The provenance of one run, made when it ends.

    ``models`` maps each role to a model name or folder (``{"generator": ..., "judge": ...}``; a metric's model as
    ``"pmi-faith --model": ...``, an adapter's base as ``"... base"``), or to a served model's identity as a mapping;
    None values are left out. ``data`` is the input file(s) read. ``options`` are the settings that differ from their
    defaults; unset, those of the ``faithkit`` command line being run (:func:`note_invocation`). ``metric_options``
    are each metric's options as it was built (``{"pmi-faith": {"model": ..., "normalize": "mean", ...}}``).

    Every record goes through :func:`faithkit.settings.redaction.redacted` here, the one way out of this module: a secret
    (an API key, a password in a server's URL) is ``***`` in every field, those added later included.
    """
    paths = [data] if isinstance(data, (str, Path)) else list(data or [])
    return redaction.redacted(
        {
            "faithkit": __version__,
            "command": _invocation.get("command") or shlex.join(sys.argv),
            "started": _invocation["started"],
            "finished": _now(),
            "models": {
                role: dict(name) if isinstance(name, Mapping) else model_identity(name)
                for role, name in models.items()
                if name is not None
            },
            "metric_options": _plain(dict(metric_options or {})),
            "data": [data_identity(path) for path in paths],
            "options": _plain(dict(record_options() if options is None else options)),
            **environment(),
        }
    )


def environment() -> dict:
    """``{"versions": ..., "machine": ...}``: Python's and :data:`LIBRARIES`' versions, faithkit's with its git
    commit (``"faithkit_git"``: None outside a checkout, ``-dirty`` when tracked files differ from it); the platform,
    the CPU, its cores and the GPUs torch sees (none when torch was not loaded: the run used none)."""
    versions: dict[str, str | None] = {"python": platform.python_version(), "faithkit": __version__}
    versions["faithkit_git"] = _git_commit()
    for library in LIBRARIES:
        try:
            versions[library] = version(library)
        except PackageNotFoundError:
            continue
    torch = sys.modules.get("torch")
    gpus = (
        [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if torch is not None and torch.cuda.is_available()
        else []
    )
    machine = {"platform": platform.platform(), "cpu": _cpu_name(), "cpu_count": os.cpu_count(), "gpus": gpus}
    return {"versions": versions, "machine": machine}


@lru_cache(maxsize=1)
def _git_commit() -> str | None:
    """The commit of the checkout faithkit runs from, ``-dirty`` when a tracked file differs; None when it runs from
    an installed copy (or git is missing)."""
    checkout = Path(__file__).resolve().parent.parent
    if not (checkout / ".git").exists():
        return None
    try:
        commit = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


@lru_cache(maxsize=1)
def _cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    from .serving.models import identity

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
    versions = provenance.get("versions", {})
    machine = provenance.get("machine", {})
    libraries = ", ".join(f"{name} {versions[name]}" for name in ("torch", "transformers") if versions.get(name))
    git = f"; faithkit git {str(versions['faithkit_git'])[:12]}" if versions.get("faithkit_git") else ""
    gpus = ", ".join(machine.get("gpus") or []) or "no GPU"
    return [
        f"faithkit {provenance['faithkit']}: {provenance['command']}",
        f"models: {models or 'none'}",
        f"data: {data or 'none'}",
        f"options differing from defaults: {options or 'none'}",
        f"run: {provenance.get('started')} to {provenance.get('finished')} on {machine.get('cpu_count')} CPU cores "
        f"({machine.get('cpu')}), {gpus}; {libraries or 'no torch'}{git}",
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
    from .data.files import write_json

    path = sidecar_path(output)
    write_json(path, {KEY: dict(provenance)})
    return path
