"""The form of responses as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``form`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class Form(evaluate_modules.RegistryMetric):
    registry_name = "form"
    inputs = ("responses",)
