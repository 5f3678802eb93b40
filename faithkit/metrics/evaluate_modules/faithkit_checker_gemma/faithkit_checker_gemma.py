"""faithkit's claim checker on the Gemma-3-270M adapter, as an ``evaluate`` module: its card is README.md beside this
file, its work faithkit's ``faithkit-checker-gemma`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class FaithkitCheckerGemma(evaluate_modules.RegistryMetric):
    registry_name = "faithkit-checker-gemma"
    inputs = ("documents", "histories", "responses")
