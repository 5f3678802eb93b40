"""The faithfulness judge as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``faith-judge`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class FaithJudge(evaluate_modules.RegistryMetric):
    registry_name = "faith-judge"
    inputs = ("documents", "histories", "responses")
