"""The claim checker nli-roberta-large-mnli as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``nli-roberta-large-mnli`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class NliRobertaLargeMnli(evaluate_modules.RegistryMetric):
    registry_name = "nli-roberta-large-mnli"
    inputs = ("documents", "responses")
