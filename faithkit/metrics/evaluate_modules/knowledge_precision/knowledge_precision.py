"""knowledge precision as an ``evaluate`` module; the card is README.md beside this file, the work is faithkit's ``lexical`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class KnowledgePrecision(evaluate_modules.RegistryMetric):
    module = "knowledge_precision"
    registry_name = "lexical"
    inputs = ("documents", "responses")
