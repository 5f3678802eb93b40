"""The AlignScore-style claim checker as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``alignscore-style`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class AlignscoreStyle(evaluate_modules.RegistryMetric):
    registry_name = "alignscore-style"
    inputs = ("documents", "responses")
