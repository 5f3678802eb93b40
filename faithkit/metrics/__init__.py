"""Faithfulness and relevance metrics, one contract (:mod:`.base`), built by name (:mod:`.registry`).

The same metrics load with ``evaluate``: ``evaluate.load(evaluate_path("pmi-faith"), model=...)``
(:mod:`.evaluate_modules`).
"""

from .registry import METRIC_NAMES, METRICS, get_spec, load_metric, load_metrics


def __getattr__(name):  # the metrics pull in torch or spaCy: import them only when asked for
    if name == "PMIFaith":
        from .pmi_faith import PMIFaith

        return PMIFaith
    if name == "Q2":
        from .q2.metric import Q2

        return Q2
    if name == "evaluate_path":  # imports evaluate and datasets
        from .evaluate_modules import evaluate_path

        return evaluate_path
    raise AttributeError(name)


__all__ = ["METRICS", "METRIC_NAMES", "PMIFaith", "Q2", "evaluate_path", "get_spec", "load_metric", "load_metrics"]
