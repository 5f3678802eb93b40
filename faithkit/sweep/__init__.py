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

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:  # loaded on first use, so the command line reads the settings (config.py) without torch and scipy
    from .config import SweepConfig, load_config
    from .run import SweepResult, run_sweep
    from .table import choose_best, sweep_markdown

__getattr__, __dir__ = lazy_names(__name__, __file__)
