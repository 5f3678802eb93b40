"""End-to-end NLI as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``e2e-nli`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class E2eNli(evaluate_modules.RegistryMetric):
    registry_name = "e2e-nli"
    inputs = ("documents", "responses")
