"""The minimal-edit contrast as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``minimal-edit`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class MinimalEdit(evaluate_modules.RegistryMetric):
    registry_name = "minimal-edit"
    inputs = ("documents", "histories", "responses")
