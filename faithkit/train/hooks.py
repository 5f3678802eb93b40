"""What an evaluation does besides dev loss: decode a fixed dev subset and score the responses.

Each evaluation decodes the same first ``generate_rows`` dev rows greedily with each of the
config's strategies (``evaluation.strategies``, from :mod:`faithkit.decoding.strategies`;
default plain decoding and PMI-DECODE at its defaults), in one
:func:`faithkit.decoding.generate_grid` call (the prompts are prefilled once for all
of them) and in the prompt layout decoding picks for the model, as training does. Each
strategy's responses are scored with the metrics the config names
(:func:`faithkit.metrics.registry.load_metrics`; the gold responses are the references).
Every scalar a metric returns is logged as ``DECODER/KEY`` with the strategy's label as
DECODER, e.g. ``pmi_a0.25_p0.6/mean_pmi`` or ``plain/mean_bleu``.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from ..data import Row, reference_of
from ..decoding import default_template
from ..decoding.generation_options import GenerationOptions, row_seed
from ..decoding.grid import generate_grid
from ..decoding.strategies import Cell
from ..decoding.base import Strategy
from ..generation.rerank import Judges
from .config import evaluation_decoders
from .memory import release_memory


class GenerationHook:
    """Decodes ``rows`` with each decoder and scores the responses with the metrics ``load_metrics()`` builds.

    The metrics (and their judge models) are built for each call and freed after it: a judge
    resident for the whole run would sit beside every training step's memory.
    """

    def __init__(
        self,
        rows: list[Row],
        load_metrics: Callable[[], dict],
        decoders: dict[str, Strategy],
        max_new_tokens: int,
        batch_size: int,
        max_context_tokens: int,
    ):
        self.rows = rows
        self.load_metrics = load_metrics
        self.decoders = decoders
        self.options = GenerationOptions(
            max_new_tokens=max_new_tokens, batch_size=batch_size, max_context_tokens=max_context_tokens
        )

    def _seeds(self) -> dict:
        """The rows' own seeds when a decoder samples (rerank's candidates), so every evaluation draws alike."""
        if not any(Cell(strategy).sampled for strategy in self.decoders.values()):
            return {}
        return {"seeds": [row_seed(0, row.id) for row in self.rows]}

    def __call__(self, model, tokenizer) -> tuple[dict[str, float], dict[str, list[str]]]:
        """``(scalars, responses)``: ``{"DECODER/KEY": value}`` and each decoder's responses, in row order."""
        documents = [row.document for row in self.rows]
        histories = [row.history for row in self.rows]
        references = [reference_of(row) for row in self.rows]
        grid = generate_grid(
            model,
            tokenizer,
            documents,
            histories,
            list(self.decoders.values()),
            self.options,
            judge=Judges(model, tokenizer),
            **self._seeds(),
        )
        responses = dict(zip(self.decoders, grid))
        release_memory()  # what decoding freed, before the judges load
        scalars, metrics = {}, self.load_metrics()
        for decoder in self.decoders:
            for metric in metrics.values():
                result = metric.compute(
                    documents=documents, histories=histories, responses=responses[decoder], references=references
                )
                scalars.update(
                    {
                        f"{decoder}/{key}": float(value)
                        for key, value in result.items()
                        if isinstance(value, numbers.Real) and not isinstance(value, bool)
                    }
                )
        return scalars, responses


# What an evaluation asks of a metric unless metric_options say otherwise: PMI-FAITH's two
# unconditional views (P(r|d), P(r)) are half of the judge's work, and training selects by PMI.
HOOK_OPTIONS = {"pmi-faith": {"unconditional": False}}


def load_hook_metrics(evaluation) -> dict:
    """The metrics the config names, with their judge models (the config check has already vetted names and options)."""
    from ..metrics.registry import load_metrics

    if not evaluation.generate_rows:
        return {}
    options = {
        name: {**HOOK_OPTIONS.get(name, {}), **(evaluation.metric_options.get(name) or {})}
        for name in evaluation.metrics
    }
    return load_metrics(evaluation.metrics, options=options)


def build_hook(
    evaluation, rows: list[Row], load_metrics: Callable[[], dict], model, tokenizer, max_length: int
) -> GenerationHook | None:
    """The config's hook on the first ``generate_rows`` dev rows whose context fits, or None when it decodes nothing.

    Training's ``max_length`` bounds the context; a causal LM's also holds the new tokens.
    """
    if not evaluation.generate_rows:
        return None
    seq2seq = model.config.is_encoder_decoder
    max_context = max_length if seq2seq else max_length - evaluation.max_new_tokens
    template = default_template(model, tokenizer)
    fitting = []
    for row in rows:
        try:
            template.view(tokenizer, row.document, row.history, max_tokens=max_context, encoder=seq2seq)
        except ValueError:  # the history alone is too long
            continue
        fitting.append(row)
        if len(fitting) == evaluation.generate_rows:
            break
    return GenerationHook(
        fitting,
        load_metrics,
        evaluation_decoders(evaluation),
        evaluation.max_new_tokens,
        evaluation.eval_batch_size,
        max_context,
    )
