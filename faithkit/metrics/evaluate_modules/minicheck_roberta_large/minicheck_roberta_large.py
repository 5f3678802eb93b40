"""The claim checker MiniCheck-RoBERTa-Large as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``minicheck-roberta-large`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class MinicheckRobertaLarge(evaluate_modules.RegistryMetric):
    registry_name = "minicheck-roberta-large"
    inputs = ("documents", "responses")
