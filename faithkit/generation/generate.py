"""Generation over rows of a file, for :func:`faithkit.data.jobs.run_job`: ``faithkit generate``."""

from __future__ import annotations

from ..data import Row, reference_of


class GeneratorJob:
    """Turns a chunk of rows into ``{"response", "gold"}`` records with one strategy; the model loads on the first chunk.

    The strategy and the options are taken whole, as checked when they were made. Sampled rows draw from their own
    generators, seeded by ``options.seed`` and the row id, so a row's response does not depend on its chunk (and a
    resumed job writes what an uninterrupted one would). Only the rerank strategy builds judges. A row whose context
    was cut to fit the model also says how (:func:`~faithkit.decoding.inputs.context_cuts`).
    """

    def __init__(self, model: str, strategy, options, device=None, dtype=None):
        from ..decoding.strategies import Cell
        from ..serving.models import LazyModel

        self.strategy, self.options, self.device = strategy, options, device
        self.model = LazyModel(model, device, dtype)
        self.sampled = Cell(strategy, options.search).sampled
        self._judges = None

    def __call__(self, rows: list[Row]) -> list[dict]:
        from ..decoding.grid import generate
        from ..decoding.inputs import context_cuts

        model, tokenizer = self.model()
        seeds = self.options.row_seeds([row.id for row in rows]) if self.sampled else None
        documents, histories = [r.document for r in rows], [r.history for r in rows]
        responses = generate(
            model, tokenizer, documents, histories, self.strategy, self.options, seeds=seeds, judge=self.judges()
        )
        key = "response" if self.options.num_return_sequences == 1 else "responses"
        cuts = context_cuts(model, tokenizer, documents, histories, options=self.options)
        return [{key: response, "gold": reference_of(row), **cut} for row, response, cut in zip(rows, responses, cuts)]

    def judges(self):
        """The rerank strategy's judges for the loaded generator (built once), or None for any other strategy."""
        from ..decoding.rerank import Rerank

        if self._judges is None and isinstance(self.strategy, Rerank):
            from .rerank import generator_judges

            model, tokenizer = self.model()
            self._judges = generator_judges(model, tokenizer, self.options, self.device)
        return self._judges
