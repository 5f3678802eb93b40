"""BLEU against the document as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``document-bleu`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class DocumentBleu(evaluate_modules.RegistryMetric):
    registry_name = "document-bleu"
    inputs = ("documents", "responses")
