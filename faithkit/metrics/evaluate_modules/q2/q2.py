"""Q² as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``q2`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class Q2(evaluate_modules.RegistryMetric):
    registry_name = "q2"
    inputs = ("documents", "responses")
