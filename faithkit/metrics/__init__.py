"""Faithfulness and relevance metrics, one contract (:mod:`.base`), built by name (:mod:`.registry`).

The same metrics load with ``evaluate``: ``evaluate.load(evaluate_path("pmi-faith"), model=...)``
(:mod:`.evaluate_modules`).
"""

from typing import TYPE_CHECKING

from .. import lazy_names
from .registry import METRIC_NAMES, METRICS, get_spec, load_metric, load_metrics

if TYPE_CHECKING:  # loaded on first use: the metrics import torch or spaCy, evaluate_modules evaluate and datasets
    from .evaluate_modules import evaluate_path
    from .pmi_faith import PMIFaith
    from .q2.metric import Q2

__getattr__, __dir__ = lazy_names(__name__, __file__)
