"""Vectara's HHEM-2.1-Open claim checker, loaded from transformers' own classes instead of its remote code.

HHEM-2.1-Open ships its own model class (``trust_remote_code``), which faithkit never runs. Its
``HHEMv2ForSequenceClassification`` only wraps transformers' own ``T5ForTokenClassification`` (weights
under ``t5.``) built from the config of its foundation model (``google/flan-t5-base``) and reads the
first position's two logits; :func:`load_hhem` builds that class from transformers itself and loads the
checkpoint's weights into it, with the prompt the checkpoint's config gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..errors import ConfigError
from ..serving import precision

if TYPE_CHECKING:
    import torch


def load_hhem(name: str, device=None, dtype=None):
    """HHEM-2.1-Open without its remote code: ``(T5ForTokenClassification, tokenizer)`` with the checkpoint's
    weights (a hub id or a folder with ``config.json`` and ``*.safetensors``; see the module's docstring).

    The checkpoint's config names its ``foundation`` (whose config and tokenizer are loaded); a folder whose
    config is a plain T5 config is its own foundation."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoTokenizer, T5ForTokenClassification

    from ..serving import models

    folder = Path(name).expanduser()
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(name, allow_patterns=["config.json", "*.safetensors"]))
    config = json.loads((folder / "config.json").read_text())
    foundation = config.get("foundation", str(folder)) if config.get("model_type") == "HHEMv2" else str(folder)
    model = T5ForTokenClassification(AutoConfig.from_pretrained(foundation, num_labels=2))
    weights = {}
    for file in sorted(folder.glob("*.safetensors")):
        weights.update({key.removeprefix("t5."): value for key, value in load_file(file).items()})
    missing, unexpected = model.load_state_dict(weights, strict=False)
    missing = [key for key in missing if not key.endswith("embed_tokens.weight")]  # tied to transformer.shared
    if missing or unexpected or not weights:
        raise ConfigError(
            f"{name} does not hold HHEM-2.1-Open's weights for {foundation}: missing "
            f"{missing[:3] or 'none'}, unexpected {unexpected[:3] or 'none'}"
        )
    model.tie_weights()
    # PreTrainedModel.to is wrapped (functools.wraps), which hides its self from mypy: call it as Module.to
    # built from its config in float32, so the checkpoint's own dtype ("auto") is float32 here
    asked = None if dtype in (None, "auto") else dtype
    placed = cast("torch.nn.Module", model).to(
        device or models.default_device(), dtype=precision.torch_dtype(asked or "float32")
    )
    return placed.eval(), AutoTokenizer.from_pretrained(foundation)
