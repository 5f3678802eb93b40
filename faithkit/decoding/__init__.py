"""Faithfulness-aware decoding: strategies (plain, PMI-DECODE, CAD, AdaCAD) as transformers logits processors."""

from .cad import AdaptiveContextAwareDecode, ContextAwareDecode
from .generate import (
    build_inputs,
    decode_responses,
    default_template,
    generate,
    generate_grid,
    iter_grid,
    length_order,
    pad_token_id,
    plan_grid,
    prompt_cache,
)
from .options import SEARCHES, GenerationOptions, row_seed
from .pmi_decode import PMIDecode
from .strategies import (
    CAD,
    PMI,
    STRATEGIES,
    STRATEGY_NAMES,
    AdaCAD,
    Cell,
    Plain,
    Strategy,
    decoded_by,
    get_strategy,
    strategy_from_dict,
)
