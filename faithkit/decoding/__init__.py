"""Faithfulness-aware decoding: strategies (plain, PMI-DECODE, CAD, AdaCAD, rerank) as transformers logits processors.

The names below load their module on first use (:func:`faithkit.lazy_names`): the strategies' and options'
declarations import no torch, so the command line builds its flags from them quickly; the processors and
``generate`` import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:
    from .generation_options import SEARCHES, GenerationOptions, default_template, row_seed
    from .grid import generate, generate_grid, iter_grid
    from .grid_plan import plan_grid
    from .inputs import build_inputs, decode_responses, length_order, pad_token_id
    from .prefill import prompt_cache
    from .two_view.cad import AdaptiveContextAwareDecode, ContextAwareDecode
    from .two_view.pmi_decode import PMIDecode
    from .strategies import (
        CAD,
        PMI,
        STRATEGIES,
        STRATEGY_NAMES,
        AdaCAD,
        Cell,
        Plain,
        Strategy,
        get_strategy,
        shared_decode,
        strategy_from_dict,
    )

__getattr__, __dir__ = lazy_names(__name__, __file__)
