"""What an evaluation does besides dev loss: decode a fixed dev subset and score the responses.

Each evaluation decodes the same first ``generate_rows`` dev rows twice through
:func:`faithkit.decoding.generate`, greedily (``alpha=0, top_p=1`` is plain greedy decoding)
and with PMI-DECODE at the config's alpha and top-p, then scores both with the metrics named
in the config (:func:`faithkit.metrics.registry.load_metrics`; the gold responses are the
references). Every scalar a metric returns is logged as ``DECODER/KEY``, e.g.
``pmi_decode/mean_pmi`` or ``greedy/mean_bleu``.
"""

from __future__ import annotations

import numbers

from ..data import Row
from ..decoding import generate
from ..prompts import PromptTemplate


class GenerationHook:
    """Decodes ``rows`` with each decoder and scores the responses; the metrics (and a judge model) load once."""

    def __init__(self, rows: list[Row], metrics: dict, decoders: dict[str, tuple[float, float]], template: PromptTemplate,
                 max_new_tokens: int, batch_size: int, max_context_tokens: int | None):
        self.rows = rows
        self.metrics = metrics
        self.decoders = decoders
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.max_context_tokens = max_context_tokens

    def __call__(self, model, tokenizer) -> tuple[dict[str, float], dict[str, list[str]]]:
        """``(scalars, responses)``: ``{"DECODER/KEY": value}`` and each decoder's responses, in row order."""
        documents = [row.document for row in self.rows]
        histories = [row.history for row in self.rows]
        references = [row.response for row in self.rows]
        scalars, responses = {}, {}
        for decoder, (alpha, top_p) in self.decoders.items():
            responses[decoder] = generate(
                model, tokenizer, documents, histories, alpha=alpha, top_p=top_p, template=self.template,
                batch_size=self.batch_size, max_context_tokens=self.max_context_tokens,
                max_new_tokens=self.max_new_tokens,
            )
            for metric in self.metrics.values():
                result = metric.compute(documents=documents, histories=histories, responses=responses[decoder],
                                        references=references)
                scalars.update({f"{decoder}/{key}": float(value) for key, value in result.items()
                                if isinstance(value, numbers.Real) and not isinstance(value, bool)})
        return scalars, responses


def build_hook(evaluation, rows: list[Row], template: PromptTemplate, max_context_tokens: int | None):
    """The config's hook, or None when it decodes nothing; metrics (and their models) load here, once."""
    if not evaluation.generate_rows:
        return None
    metrics = {}
    if evaluation.metrics:
        from ..metrics.registry import load_metrics

        metrics = load_metrics(evaluation.metrics, options=evaluation.metric_options)
    decoders = {"greedy": (0.0, 1.0), "pmi_decode": (evaluation.alpha, evaluation.top_p)}
    return GenerationHook(rows[:evaluation.generate_rows], metrics, decoders, template, evaluation.max_new_tokens,
                          evaluation.eval_batch_size, max_context_tokens)
