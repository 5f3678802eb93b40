"""Knowledge precision, and token F1 and BLEU against the gold, as an ``evaluate`` module: its card is README.md beside
this file, its work faithkit's ``lexical`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class Lexical(evaluate_modules.RegistryMetric):
    registry_name = "lexical"
    inputs = ("documents", "responses", "references")
