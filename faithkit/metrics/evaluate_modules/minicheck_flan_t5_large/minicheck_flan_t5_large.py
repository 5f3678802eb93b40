"""The claim checker MiniCheck-Flan-T5-Large as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``minicheck-flan-t5-large`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class MinicheckFlanT5Large(evaluate_modules.RegistryMetric):
    registry_name = "minicheck-flan-t5-large"
    inputs = ("documents", "responses")
