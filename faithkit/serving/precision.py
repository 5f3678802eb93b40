"""The precisions a model runs in, by the names every command, config and :func:`faithkit.serving.models.load` take, and
the check that a precision held.

``auto`` is the checkpoint's own dtype. Nothing asked (None) means ``auto`` on a GPU and float32 on a CPU, where
half precision is slow and not exact. Half precision can overflow: Gemma 3 in float16 gives NaN logits, which
would silently become NaN scores and empty responses, so the scorer and the decoders check what they read
(docs/precision.md has the measurements).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..settings.options import option

DTYPES = ("auto", "float32", "bfloat16", "float16")
HELP = (
    "precision of the model: auto (the checkpoint's own dtype), float32, bfloat16 or float16 "
    "(default: auto on a GPU, float32 on a CPU)"
)


@dataclass(frozen=True)
class Placement:
    """Where and in what precision a command runs its models: the ``--device`` and ``--dtype`` of every command,
    config and metric that loads one."""

    device: str | None = option(None, "torch device (default: cuda if available, else cpu)")
    dtype: str | None = option(None, HELP, choices=DTYPES)


def dtype_name(value) -> str | None:
    """The name in :data:`DTYPES` of ``value`` (a name, a ``torch.dtype`` or None); a ConfigError naming the choices
    for anything else."""
    from ..errors import ConfigError

    if value is None:
        return None
    name = str(value).removeprefix("torch.")
    if name not in DTYPES:
        raise ConfigError(f"dtype {value!r} is not one of {', '.join(DTYPES)}")
    return name


def torch_dtype(name: str):
    """``"bfloat16"`` -> ``torch.bfloat16``; ``"auto"`` stays ``"auto"`` (transformers reads the checkpoint's)."""
    import torch

    return name if name == "auto" else getattr(torch, name)


def non_finite_message(dtype=None) -> str:
    """What to say when the logits are NaN or +inf; ``dtype`` is the model's, when the caller knows it."""
    which = f"the model runs in {dtype_name(dtype)}" if dtype is not None else "the model's precision overflowed"
    return (
        f"the model's logits are NaN or infinite: {which}, and half precision overflows in some models "
        "(Gemma 3 in float16 does). Load it in bfloat16 or float32: --dtype bfloat16 on the command line, "
        "dtype='bfloat16' in faithkit.serving.models.load"
    )


def check_finite(values, dtype=None) -> None:
    """Raise :class:`~faithkit.errors.PrecisionError` if ``values`` hold a NaN or +inf (-inf is a masked token,
    which logits processors set on purpose).

    One float32 sum, no copy: it is NaN or +inf exactly when a value is NaN or +inf (NaN also when +inf meets -inf).
    """
    import torch

    from ..errors import PrecisionError

    total = values.sum(dtype=torch.float32)
    if torch.isnan(total) or total == float("inf"):
        raise PrecisionError(non_finite_message(dtype))
