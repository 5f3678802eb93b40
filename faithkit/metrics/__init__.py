"""Faithfulness and relevance metrics, one contract (:mod:`.base`), built by name (:mod:`.registry`)."""

from .registry import METRIC_NAMES, METRICS, get_spec, load_metric, load_metrics


def __getattr__(name):  # the metrics pull in torch or spaCy: import them only when asked for
    if name == "PMIFaith":
        from .pmi_faith import PMIFaith

        return PMIFaith
    if name == "Q2":
        from .q2 import Q2

        return Q2
    raise AttributeError(name)


__all__ = ["METRICS", "METRIC_NAMES", "PMIFaith", "Q2", "get_spec", "load_metric", "load_metrics"]
