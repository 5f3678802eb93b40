"""NaN and infinity are never settings: every number an option takes is checked here to be finite.

``float("nan")`` compares false with every bound, so a range check alone lets it through (and
``inf`` passes an open upper end); both then reach a decode or a fingerprint, which JSON cannot
hold. :func:`finite_float` is the argparse type of every number flag; :func:`check_finite`
is what :func:`faithkit.settings.options.coerce` and metric options call, and
:func:`faithkit.settings.options.check` (strategies, generation options, sweep grids, training config,
metric constructors) refuses them in the same words (:func:`is_non_finite`).
"""

from __future__ import annotations

import argparse
import math

from ..errors import ConfigError


def is_non_finite(value) -> bool:
    """A float that is NaN or ±infinity (booleans, ints and text are not)."""
    return isinstance(value, float) and not math.isfinite(value)


def check_finite(value, name: str) -> None:
    """A :class:`ConfigError` naming the option ``name`` when ``value`` is NaN or ±infinity."""
    if is_non_finite(value):
        raise ConfigError(f"{name} {value} is not a usable number; give a finite value")


def finite_float(text: str) -> float:
    """argparse type for a number flag: NaN and ±infinity are refused, naming the value."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text} is not a usable number; give a finite value")
    return value
