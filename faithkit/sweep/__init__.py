"""Decoding sweeps: a grid over strategies (plain, PMI-DECODE, …) on a dev set, judged for faithfulness, relevance
and fluency, with intervals and paired tests against plain decoding.

:func:`run_sweep` generates every cell's responses (each batch's prompts prepared once for
the whole grid; cells that decode alike once), scores them all with the judge metrics (one
scorer call per group of contexts, so each context is run once for the whole grid) and the
cheap measures of the metric registry; it writes ``sweep.csv`` (values, 95% bootstrap
intervals, paired p-values), ``best.json``, heatmaps and ``report.html``. Every output
resumes where an interrupted run stopped. Settings: :class:`SweepConfig` /
:func:`load_config` (YAML plus command-line overrides).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import SweepConfig, load_config
    from .run import SweepResult, run_sweep
    from .table import choose_best, sweep_markdown

_HOME = {
    "SweepConfig": "config",
    "load_config": "config",
    "SweepResult": "run",
    "run_sweep": "run",
    "choose_best": "table",
    "sweep_markdown": "table",
}
"""Where each name lives: loaded on first use, so the command line reads the settings' declarations (config.py)
without the run's imports (torch, scipy)."""

__all__ = sorted(_HOME)

_MOVED = {"markdown_table": ("faithkit.sweep", "sweep_markdown"), "decoded_by": ("faithkit.decoding", "shared_decode")}
"""Names this package had, and where they are now."""


def __getattr__(name: str):
    """A name of this package, importing its module on first use; a name that moved, with a DeprecationWarning
    naming where it is now."""
    if name in _HOME:
        return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, new = _MOVED[name]
    warnings.warn(f"faithkit.sweep.{name} is deprecated; use {module}.{new}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), new)
