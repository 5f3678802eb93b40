"""faithkit's claim checker on the SmolLM2 adapter, as an ``evaluate`` module: its card is README.md beside this
file, its work faithkit's ``faithkit-checker-smollm2`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class FaithkitCheckerSmollm2(evaluate_modules.RegistryMetric):
    registry_name = "faithkit-checker-smollm2"
    inputs = ("documents", "histories", "responses")
