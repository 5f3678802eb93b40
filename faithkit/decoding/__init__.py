"""Faithfulness-aware decoding: strategies (plain, PMI-DECODE, CAD, AdaCAD) as transformers logits processors.

The names below load their module on first use (PEP 562): the strategies' and options' declarations import no
torch, so the command line builds its flags from them quickly; the processors and ``generate`` import torch.
"""

from __future__ import annotations

import importlib
import sys
import types
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cad import AdaptiveContextAwareDecode, ContextAwareDecode
    from .generate import generate
    from .generation_options import SEARCHES, GenerationOptions, default_template, row_seed
    from .grid import generate_grid, iter_grid
    from .grid_plan import plan_grid
    from .inputs import build_inputs, decode_responses, length_order, pad_token_id
    from .pmi_decode import PMIDecode
    from .prefill import prompt_cache
    from .strategies import (
        CAD,
        PMI,
        STRATEGIES,
        STRATEGY_NAMES,
        AdaCAD,
        Cell,
        Plain,
        Strategy,
        shared_decode,
        get_strategy,
        strategy_from_dict,
    )

_MODULES = {
    "cad": ("AdaptiveContextAwareDecode", "ContextAwareDecode"),
    "generate": ("generate",),
    "generation_options": ("SEARCHES", "GenerationOptions", "default_template", "row_seed"),
    "grid": ("generate_grid", "iter_grid"),
    "grid_plan": ("plan_grid",),
    "inputs": ("build_inputs", "decode_responses", "length_order", "pad_token_id"),
    "pmi_decode": ("PMIDecode",),
    "prefill": ("prompt_cache",),
    "strategies": (
        "CAD",
        "PMI",
        "STRATEGIES",
        "STRATEGY_NAMES",
        "AdaCAD",
        "Cell",
        "Plain",
        "Strategy",
        "shared_decode",
        "get_strategy",
        "strategy_from_dict",
    ),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(_HOME)

_RENAMED = {"decoded_by": "shared_decode"}
"""Names this package had, and their names now (``decoded_by`` read like the sweep's ``drawn_by``)."""


def __getattr__(name: str):
    """A name of this package, importing its module on first use; a renamed one with a DeprecationWarning."""
    if name in _RENAMED:
        warnings.warn(f"faithkit.decoding.{name} is deprecated; use {_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        name = _RENAMED[name]
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)


def __dir__():
    return sorted([*globals(), *_HOME])


class _Package(types.ModuleType):
    """This package, whose ``generate`` is the function although a submodule has that name too.

    Python sets a submodule, once imported, as an attribute of its package, which would make
    ``faithkit.decoding.generate`` the module; the function keeps the name, as when this package imported it eagerly.
    """

    def __setattr__(self, name: str, value) -> None:
        if name == "generate" and isinstance(value, types.ModuleType):
            value = value.generate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
