"""Overlap F1 with the document as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``overlap-f1`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class OverlapF1(evaluate_modules.RegistryMetric):
    registry_name = "overlap-f1"
    inputs = ("documents", "responses")
