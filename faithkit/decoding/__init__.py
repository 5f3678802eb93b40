"""Faithfulness-aware decoding as transformers logits processors."""

from .generate import build_inputs, decode_responses, default_template, generate, pad_token_id, prompt_cache
from .pmi_decode import PMIDecode
from .span_constrained import SpanConstrainedLogitsProcessor
