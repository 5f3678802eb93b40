"""Q²'s offline backend specs, read without torch, so that the command line checks the model a spec names
(``"scoring:smollm2-135m"`` names ``smollm2-135m``) before anything loads; :func:`~.backends.build_backend` builds
them."""

from __future__ import annotations

OFFLINE_METHODS = {
    "qg": ("rules", "fewshot"),
    "qa": ("scoring",),
    "nli": ("labels", "checker"),
}
"""Each stage's offline methods, written ``"METHOD:LM"``; ``"rules"`` and ``"checker"`` (the shipped claim checker)
also stand alone, and ``"checker:ADAPTER"`` names an adapter folder ``faithkit checker train`` wrote."""

NAMING_NO_MODEL = ("rules", "checker")
"""The methods that also stand alone as a whole spec, naming no model."""


def named_model(spec: str) -> str | None:
    """The model or adapter folder a stage spec names: ``LM`` of ``"METHOD:LM"``, None for ``"rules"`` and
    ``"checker"``, and the spec itself for a hub id or a folder."""
    if spec in NAMING_NO_MODEL:
        return None
    method, colon, name = spec.partition(":")
    if colon and any(method in methods for methods in OFFLINE_METHODS.values()):
        return name or None
    return spec


__all__ = ["NAMING_NO_MODEL", "OFFLINE_METHODS", "named_model"]
