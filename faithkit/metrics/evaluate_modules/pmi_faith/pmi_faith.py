"""PMI-FAITH as an ``evaluate`` module; the card is README.md beside this file, the work is faithkit's ``pmi-faith`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class PmiFaith(evaluate_modules.RegistryMetric):
    module = "pmi_faith"
    registry_name = "pmi-faith"
    inputs = ("documents", "histories", "responses")
