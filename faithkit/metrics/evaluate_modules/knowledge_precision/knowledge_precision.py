"""Knowledge precision as an ``evaluate`` module: its card is README.md beside this file.

It gives knowledge precision only: its work is faithkit's ``lexical`` metric, which computes the relevance
measures (token F1, BLEU) only against references, and the module takes none (its inputs are documents and
responses)."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class KnowledgePrecision(evaluate_modules.RegistryMetric):
    module = "knowledge_precision"
    registry_name = "lexical"
    inputs = ("documents", "responses")
