"""The served LLM judge as an ``evaluate`` module: its card is README.md beside this file, its work faithkit's
``llm-judge`` metric."""

from faithkit.metrics import evaluate_modules  # not its class: evaluate.load takes the first Metric class here


class LlmJudge(evaluate_modules.RegistryMetric):
    registry_name = "llm-judge"
    inputs = ("documents", "histories", "responses")
