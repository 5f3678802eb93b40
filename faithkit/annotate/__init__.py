"""Human evaluation as the PMI-DECODE paper ran it: a blind A/B annotation page and its report.

- :mod:`~faithkit.annotate.task`: :func:`build_task` samples contexts where two systems (two
  sweep cells, or two ``generate`` outputs) answer differently, randomises their sides, and
  writes ``annotate.html`` (for the annotators) and ``key.json`` (for the researcher).
- :mod:`~faithkit.annotate.page`: the self-contained page, from the ``page.html`` template.
- :mod:`~faithkit.annotate.exports`: the annotators' exports read back and checked against the key.
- :mod:`~faithkit.annotate.report`: the ratings -> shares, win rates, sign tests,
  agreement and the correlation of human faithfulness with the automatic scores.
- :mod:`~faithkit.annotate.agreement`: Krippendorff's alpha and Fleiss' kappa.
"""

from .exports import read_annotations
from .report import summarize, write_report
from .task import ANSWERS, DIMENSIONS, System, build_task, read_key, sweep_cells, sweep_system

__all__ = [
    "ANSWERS",
    "DIMENSIONS",
    "System",
    "build_task",
    "read_annotations",
    "read_key",
    "summarize",
    "sweep_cells",
    "sweep_system",
    "write_report",
]
