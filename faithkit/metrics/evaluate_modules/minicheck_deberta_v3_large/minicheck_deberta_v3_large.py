"""The claim checker MiniCheck-DeBERTa-v3-Large as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``minicheck-deberta-v3-large`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class MinicheckDebertaV3Large(evaluate_modules.RegistryMetric):
    registry_name = "minicheck-deberta-v3-large"
    inputs = ("documents", "responses")
