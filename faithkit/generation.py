"""Generation over rows of a file, for :func:`faithkit.jobs.run_job`: ``faithkit generate`` and the sweep."""

from __future__ import annotations

from .data import Row, reference_of


class GeneratorJob:
    """Turns a chunk of rows into ``{"response", "gold"}`` records with one strategy; the model loads on the first chunk.
    A row whose context was cut to fit the model also says how (:func:`~faithkit.decoding.generate.context_cuts`).

    Sampled rows draw from their own generators, seeded by ``options.seed`` and the row id, so
    a row's response does not depend on its chunk (and a resumed job writes what an
    uninterrupted one would).
    """

    def __init__(self, model: str, strategy, options, device=None, dtype=None):
        from .reranking import LazyGenerator

        self.strategy, self.options = strategy, options
        self.generator = LazyGenerator(model, options, device, dtype)

    def __call__(self, rows: list[Row]) -> list[dict]:
        from .decoding.generate import context_cuts, generate
        from .decoding.strategies import Cell

        model, tokenizer, judges = self.generator()
        sampled = Cell(self.strategy, self.options.search).sampled
        options = self.options.generate_kwargs(model, tokenizer, ids=[row.id for row in rows], sampled=sampled)
        responses = generate(
            model,
            tokenizer,
            [r.document for r in rows],
            [r.history for r in rows],
            strategy=self.strategy,
            judge=judges,
            **options,
        )
        key = "response" if self.options.num_return_sequences == 1 else "responses"
        cuts = context_cuts(
            model,
            tokenizer,
            [r.document for r in rows],
            [r.history for r in rows],
            template=options["template"],
            max_context_tokens=options["max_context_tokens"],
            max_new_tokens=options["max_new_tokens"],
        )
        return [{key: response, "gold": reference_of(row), **cut} for row, response, cut in zip(rows, responses, cuts)]
