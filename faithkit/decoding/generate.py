"""``generate``: one strategy's responses for (document, history) contexts, the public entry of a decode.

It is a grid of one cell (:func:`~faithkit.decoding.grid.iter_grid`). The names this module held before it was
split (inputs, prefill, grid, joint batching) still import from here for one release, with a DeprecationWarning.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence

from ..errors import ConfigError
from .generation_options import GenerationOptions
from .grid import LEGACY_KEYWORDS, collect, iter_grid, options_of, require_judge
from .strategies import PMI, Cell, Strategy, strategy_from_dict


def generate(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    strategy: Strategy | dict | str = PMI(),
    options: GenerationOptions | None = None,
    **keywords,
) -> list:
    """Responses of one strategy for (document, history) contexts: one string each, or a list with ``num_return_sequences>1``.

    ``strategy`` is a :class:`~faithkit.decoding.strategies.Strategy`, its config dict
    (``{"name": "cad", "alpha": 1}``) or a name (default: PMI-DECODE at its defaults). ``options``: a
    :class:`~faithkit.decoding.GenerationOptions`, taken whole (its ``num_beams`` and ``do_sample`` choose the
    search); its fields given as keywords (``max_new_tokens=40``, ``do_sample=True``…) change it, and without
    options make it (``max_new_tokens`` unset: the model's generation config's, else 40). Contexts are batched by
    length, ``batch_size`` contexts at a time, and their prompts prefilled once without padding.

    The other keywords: ``template`` (the prompt layout), ``seeds`` (when sampling, one per context, e.g.
    :func:`faithkit.decoding.row_seed` of the row ids: every context draws from its own generator, so its response
    does not depend on its batch; without them, draws come from torch's global RNG), ``judge`` (the ``rerank``
    strategy's, :class:`faithkit.generation.rerank.Judges`), and the rest go to ``model.generate`` (``logits_processor``…).
    The pre-strategy keywords ``alpha=``/``top_p=`` still mean ``PMI(alpha, top_p)``, with a DeprecationWarning.
    """
    strategy = strategy_from_dict(_pmi_of_old_keywords(strategy, keywords))
    options = options_of(model, options, keywords)
    cells = [Cell(strategy, options.search)]
    require_judge(cells, keywords.get("judge"))
    return collect(iter_grid(model, tokenizer, documents, histories, cells, options, **keywords), 1, len(documents))[0]


def _pmi_of_old_keywords(strategy, keywords: dict):
    """``strategy``, or PMI-DECODE with the ``alpha=``/``top_p=`` keywords of the pre-strategy ``generate`` (popped
    from ``keywords``, with a DeprecationWarning): they meant ``PMI(alpha, top_p)``."""
    old = {key: keywords.pop(key) for key in LEGACY_KEYWORDS if key in keywords}
    if not old:
        return strategy
    strategy = strategy_from_dict(strategy)
    if strategy.name != "pmi":
        raise ConfigError(
            f"{', '.join(f'{key}=' for key in old)} (the pre-strategy spelling of PMI(alpha, top_p)) "
            f"with strategy {strategy.name!r}: give the parameters in the strategy instead, e.g. "
            f"{{'name': {strategy.name!r}, **{old!r}}}"
        )
    replacement = PMI(**{**strategy.parameters(), **old})
    warnings.warn(
        f"generate({', '.join(f'{key}=' for key in old)}…) is deprecated; pass the strategy: "
        f"generate(model, tokenizer, documents, histories, PMI(alpha={replacement.alpha:g}, "
        f"top_p={replacement.top_p:g}), …)",
        DeprecationWarning,
        stacklevel=3,
    )
    return replacement


_MOVED = {
    "inputs": ("build_inputs", "context_room", "decode_responses", "length_order", "pad_token_id", "response_text"),
    "prefill": ("PreparedBatch", "merge_blocks", "prefill_blocks", "prompt_cache"),
    "grid": ("generate_grid", "iter_grid"),
    "grid_plan": ("GridPlan", "plan_grid"),
    "joint": ("JOINT_CACHE_BYTES", "cache_bytes_per_token", "joint_row_budget"),
    "generation_options": ("default_template",),
}
_HOME = {name: module for module, names in _MOVED.items() for name in names}


def __getattr__(name: str):
    """A name this module held before the split, from its new module, with a DeprecationWarning (for one release)."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"faithkit.decoding.generate.{name} is deprecated: import it from faithkit.decoding "
        f"(or faithkit.decoding.{_HOME[name]})",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(f".{_HOME[name]}", __package__), name)
