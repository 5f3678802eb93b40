"""faithkit's claim checker as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``faithkit-checker`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class FaithkitChecker(evaluate_modules.RegistryMetric):
    registry_name = "faithkit-checker"
    inputs = ("documents", "histories", "responses")
