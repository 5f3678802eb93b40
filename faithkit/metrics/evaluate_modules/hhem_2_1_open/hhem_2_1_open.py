"""The claim checker HHEM-2.1-Open as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``hhem-2.1-open`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class Hhem21Open(evaluate_modules.RegistryMetric):
    registry_name = "hhem-2.1-open"
    inputs = ("documents", "responses")
