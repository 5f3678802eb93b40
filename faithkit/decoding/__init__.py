"""Faithfulness-aware decoding as transformers logits processors."""

from .generate import (
    build_inputs,
    decode_responses,
    default_template,
    generate,
    generate_grid,
    iter_grid,
    length_order,
    pad_token_id,
    prompt_cache,
)
from .pmi_decode import PMIDecode
from .settings import DecodingSettings, row_seed
from .span_constrained import SpanConstrainedLogitsProcessor
