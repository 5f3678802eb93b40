"""Knowledge precision as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``lexical`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class KnowledgePrecision(evaluate_modules.RegistryMetric):
    module = "knowledge_precision"
    registry_name = "lexical"
    inputs = ("documents", "responses")
