"""Fine-tuning dialogue models (seq2seq and causal LMs) with accelerate.

``accelerate launch train.py --config configs/train/NAME.yaml`` (or ``faithkit train …``) runs
:func:`train` on a :class:`TrainConfig` read by :func:`load_config`:

- :mod:`~faithkit.train.config`: the settings (YAML sections, command-line overrides, checks).
- :mod:`~faithkit.train.data`: rows to token ids through the shared prompt views.
- :mod:`~faithkit.train.model`: pretrained or small random models.
- :mod:`~faithkit.train.hooks`: decoding and scoring a dev subset at each evaluation.
- :mod:`~faithkit.train.loop`: the accelerate loop, checkpoints and resumption.
- :mod:`~faithkit.train.memory`: handing freed memory back to the OS between phases.
"""

from .config import TrainConfig, load_config
from .loop import train

__all__ = ["TrainConfig", "load_config", "train"]
