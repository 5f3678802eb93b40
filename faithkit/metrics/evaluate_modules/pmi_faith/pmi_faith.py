"""PMI-FAITH as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``pmi-faith`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class PmiFaith(evaluate_modules.RegistryMetric):
    registry_name = "pmi-faith"
    inputs = ("documents", "histories", "responses")
