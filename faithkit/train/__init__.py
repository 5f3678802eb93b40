"""Fine-tuning dialogue models (seq2seq and causal LMs) with accelerate.

``accelerate launch train.py --config configs/train/NAME.yaml`` (or ``faithkit train …``) runs
:func:`train` on a :class:`TrainConfig` read by :func:`load_config`:

- :mod:`~faithkit.train.config`: the settings (YAML sections, command-line overrides, checks).
- :mod:`~faithkit.train.data`: rows to token ids through the shared prompt views.
- :mod:`~faithkit.train.model`: pretrained or small random models.
- :mod:`~faithkit.train.hooks`: decoding and scoring a dev subset at each evaluation.
- :mod:`~faithkit.train.loop`: the accelerate loop and resumption.
- :mod:`~faithkit.train.steps`: one optimizer step's loss and the dev loss.
- :mod:`~faithkit.train.run_folder`: which run owns an output folder, and its logs.
- :mod:`~faithkit.train.checkpoint`: ``best/`` and ``last/``.
- :mod:`~faithkit.train.state`: the resumable state, read back without unpickling.
- :mod:`~faithkit.train.memory`: handing freed memory back to the OS between phases.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import TrainConfig, load_config
    from .loop import train

_HOME = {"TrainConfig": "config", "load_config": "config", "train": "loop"}
"""Where each name lives: loaded on first use, so ``faithkit train --help`` reads the settings (config.py) without
the loop's imports (torch, accelerate)."""

__all__ = sorted(_HOME)


def __getattr__(name: str):
    """A name of this package, importing its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
