"""PMI-DECODE sweeps: an alpha x top_p grid on a dev set, judged for faithfulness and relevance.

:func:`run_sweep` generates every cell's responses (each batch's prompts prepared once for
the whole grid), scores them all with PMI-FAITH under a judge model (one scorer call per
group of contexts, so each context is run once for the whole grid), optionally Q², and the
lexical measures; it writes ``sweep.csv``, ``best.json``, heatmaps and ``report.html``. Every
output resumes where an interrupted run stopped. Settings: :class:`SweepConfig` /
:func:`load_config` (YAML plus command-line overrides).
"""

from .config import Cell, SweepConfig, load_config
from .run import SweepResult, run_sweep
from .table import choose_best, is_repeated, markdown_table

__all__ = ["Cell", "SweepConfig", "SweepResult", "choose_best", "is_repeated", "load_config", "markdown_table",
           "run_sweep"]
