"""Generation over rows of a file, for :func:`faithkit.jobs.run_job`: ``faithkit generate`` and the sweep."""

from __future__ import annotations

from ..data import Row

REFERENCE_FIELDS = ("gold", "reference")


def reference_of(row: Row) -> str | None:
    """The row's reference response: a ``gold``/``reference`` column, else its ``response`` column."""
    for name in REFERENCE_FIELDS:
        if row.extras.get(name):
            return str(row.extras[name])
    return row.response or None


class GeneratorJob:
    """Turns a chunk of rows into ``{"response", "gold"}`` records; the model loads on the first chunk.

    ``generate_options`` are :func:`faithkit.decoding.generate`'s keyword arguments (alpha,
    top_p, num_beams, max_new_tokens, …); ``chat`` picks the template (None: the model's
    default, see :func:`faithkit.decoding.default_template`).
    """

    def __init__(self, model: str, generate_options: dict, chat: bool | None = None, device=None):
        self.model_name, self.options, self.chat, self.device = model, dict(generate_options), chat, device
        self._loaded = None

    def _load(self):
        if self._loaded is None:
            from .. import models
            from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE
            from .generate import default_template

            model, tokenizer = models.load(self.model_name, kind=models.model_kind(self.model_name),
                                           device=self.device)
            template = {None: default_template(model, tokenizer), True: CHAT_TEMPLATE, False: DEFAULT_TEMPLATE}
            self._loaded = model, tokenizer, template[self.chat]
        return self._loaded

    def __call__(self, rows: list[Row]) -> list[dict]:
        from .generate import generate

        model, tokenizer, template = self._load()
        responses = generate(model, tokenizer, [r.document for r in rows], [r.history for r in rows],
                             template=template, **self.options)
        key = "response" if self.options.get("num_return_sequences", 1) == 1 else "responses"
        return [{key: response, "gold": reference_of(row)} for row, response in zip(rows, responses)]
