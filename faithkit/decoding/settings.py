"""Generation settings in one place, shared by ``faithkit generate``, the sweep and training hooks.

:meth:`DecodingSettings.validate` checks every value against the others before a model is
loaded, and its messages name the command-line flag and the fix, so a bad setting costs
the user a second, not a model load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE, PromptTemplate
from .generate import default_template


@dataclass(frozen=True)
class DecodingSettings:
    """How to decode with PMI-DECODE: the (alpha, top_p) cell, the search, sampling and batching.

    ``seed`` (0 when sampling without one) seeds every row's own random generator together
    with the row's id (:func:`row_seed`), so a sampled row gets the same response whatever
    batch it lands in, and a resumed run writes exactly what an uninterrupted one would;
    another seed gives other draws. ``chat=None`` uses the
    tokenizer's chat template when the model is decoder-only and has one.
    """

    alpha: float = 0.25
    top_p: float = 0.6
    num_beams: int = 1
    num_return_sequences: int = 1
    do_sample: bool = False
    temperature: float | None = None
    top_k: int | None = None
    seed: int | None = None
    max_new_tokens: int = 40
    batch_size: int = 8
    max_context_tokens: int | None = None
    chat: bool | None = None

    def validate(self) -> DecodingSettings:
        """Raise :class:`ConfigError` naming the flag and the fix for the first bad value; return self."""
        if not 0.0 <= self.alpha <= 1.0:
            raise ConfigError(f"--alpha {self.alpha:g} is out of range: use a value in [0, 1] "
                              "(0 = plain decoding, 1 = rank by PMI alone)")
        if not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"--top-p {self.top_p:g} is out of range: use a value in (0, 1] (1 keeps every token)")
        for flag, value in (("--num-beams", self.num_beams), ("--num-return-sequences", self.num_return_sequences),
                            ("--max-new-tokens", self.max_new_tokens), ("--batch-size", self.batch_size)):
            if value < 1:
                raise ConfigError(f"{flag} {value} is out of range: use an integer of at least 1")
        if self.max_context_tokens is not None and self.max_context_tokens < 1:
            raise ConfigError(f"--max-context-tokens {self.max_context_tokens} is out of range: use at least 1, "
                              "or leave it out to keep whole contexts")
        if self.do_sample:
            if self.num_beams > 1:
                raise ConfigError(f"--do-sample with --num-beams {self.num_beams}: beam sampling cannot keep "
                                  "PMI-DECODE's history-only rows in step; use --num-beams 1 to sample, or drop "
                                  "--do-sample for beam search")
            if self.temperature is not None and not self.temperature > 0:
                raise ConfigError(f"--temperature {self.temperature:g} is out of range: use a value above 0")
            if self.top_k is not None and self.top_k < 1:
                raise ConfigError(f"--top-k {self.top_k} is out of range: use at least 1, or leave it out")
        else:
            given = [flag for flag, value in (("--temperature", self.temperature), ("--top-k", self.top_k),
                                              ("--seed", self.seed)) if value is not None]
            if given:
                raise ConfigError(f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to sampling only: "
                                  "add --do-sample, or drop them")
            if self.num_return_sequences > self.num_beams:
                raise ConfigError(f"--num-return-sequences {self.num_return_sequences} is more than --num-beams "
                                  f"{self.num_beams}: search returns at most one response per beam; raise "
                                  "--num-beams or add --do-sample")
        return self

    def template(self, model, tokenizer) -> PromptTemplate:
        """The prompt layout: ``chat`` when set, else the chat template for decoder-only models that have one."""
        if self.chat is None:
            return default_template(model, tokenizer)
        return CHAT_TEMPLATE if self.chat else DEFAULT_TEMPLATE

    def generate_kwargs(self, model, tokenizer, ids: Sequence | None = None) -> dict:
        """Keyword arguments of :func:`~faithkit.decoding.generate` / ``generate_grid`` for these settings.

        Alpha and top_p are left out (they are the cell: pass them, or the grid's cells).
        ``ids`` (the rows' ids) seed each sampled row's generator; sampling needs them.
        """
        kwargs = {"template": self.template(model, tokenizer), "batch_size": self.batch_size,
                  "max_context_tokens": self.max_context_tokens, "max_new_tokens": self.max_new_tokens,
                  "num_beams": self.num_beams, "num_return_sequences": self.num_return_sequences}
        if self.do_sample:
            if ids is None:
                raise ValueError("sampling settings need the rows' ids to seed each row's generator")
            kwargs["do_sample"] = True
            kwargs["seeds"] = [row_seed(self.seed or 0, row_id) for row_id in ids]
            kwargs.update({name: getattr(self, name) for name in ("temperature", "top_k")
                           if getattr(self, name) is not None})
        return kwargs


def row_seed(seed: int, row_id) -> int:
    """A row's own seed: a stable hash of the run's seed and the row id (the same in every process and order)."""
    digest = hashlib.sha256(f"{seed}\x00{row_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)
