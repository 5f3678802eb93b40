"""Faithfulness metrics, each with ``compute(...)`` in the ``evaluate`` style and ``compute_rows(...)`` for jobs.

``load_metric(name, **options)`` builds one by the name the command line uses.
"""

from .pmi_faith import PMIFaith

METRIC_NAMES = ("pmi-faith", "q2", "e2e-nli", "overlap-f1", "bleu")


def load_metric(name: str, **options):
    """Build a metric by its CLI name; options are its constructor's keyword arguments."""
    if name == "pmi-faith":
        return PMIFaith(**options)
    if name == "q2":
        from .q2 import Q2

        return Q2(**options)
    if name == "e2e-nli":
        from .nli import E2ENLI

        return E2ENLI(**options)
    if name in ("overlap-f1", "bleu"):
        from .baselines import TextOverlap

        return TextOverlap(kind=name, **options)
    raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRIC_NAMES)}")


def __getattr__(name):  # Q2 pulls in spaCy; import it only when asked for
    if name == "Q2":
        from .q2 import Q2

        return Q2
    raise AttributeError(name)


__all__ = ["PMIFaith", "Q2", "load_metric", "METRIC_NAMES"]
