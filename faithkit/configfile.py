"""Reading a YAML settings file (``faithkit sweep --config``, ``faithkit train --config``) with one-line errors."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError


def read_yaml(path: str | Path, flag: str = "--config") -> object:
    """The parsed YAML of ``path``; a missing file, a folder, non-UTF-8 bytes or bad YAML is one ConfigError line
    naming the file (and, for bad YAML, the line and column)."""
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
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}") from None
