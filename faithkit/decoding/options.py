"""Deprecated: this module is :mod:`faithkit.decoding.generation_options` now (a name that says what it declares).

Importing it warns and gives the same names, for one release.
"""

from __future__ import annotations

import warnings

from .generation_options import SEARCHES, GenerationOptions, default_template, row_seed, search_of

__all__ = ["SEARCHES", "GenerationOptions", "default_template", "row_seed", "search_of"]

warnings.warn(
    "faithkit.decoding.options is deprecated: import from faithkit.decoding.generation_options "
    "(or faithkit.decoding) instead",
    DeprecationWarning,
    stacklevel=2,
)
