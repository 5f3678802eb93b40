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

from typing import TYPE_CHECKING

from .. import lazy_names

if TYPE_CHECKING:  # loaded on first use, so `faithkit train --help` reads the settings without torch and accelerate
    from .config import TrainConfig, load_config
    from .loop import train

__getattr__, __dir__ = lazy_names(__name__, __file__)
