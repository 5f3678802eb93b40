"""faithkit: make document-grounded dialogue models say only what their documents support, and measure it.

The subpackages load on first use (``faithkit.metrics``, ``faithkit.decoding``, ...), so ``import faithkit`` stays
light: most of them import torch, which takes seconds.
"""

import importlib

__version__ = "0.1.0"

SUBMODULES = (
    "annotate",
    "cli",
    "checker",
    "data",
    "decoding",
    "errors",
    "eval",
    "generation",
    "metrics",
    "prompts",
    "report",
    "serving",
    "settings",
    "sweep",
    "train",
)


def __getattr__(name: str):
    """``faithkit.metrics`` and the like without importing them first (PEP 562)."""
    if name in SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'faithkit' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *SUBMODULES])
