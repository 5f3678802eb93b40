"""The models a metric reads, by role, as it runs: the ones its options name and the defaults it falls back to.

Provenance (:mod:`faithkit.provenance`) names every model that made a score, so a metric whose model is its default
(a claim checker's hub model, faithkit's shipped checker adapter, Q²'s stage models, faith-judge's judge LM) is
named as surely as one given by a flag. An adapter folder is named with its base model beside it, each pinned down by
:func:`faithkit.serving.models.identity` (a folder by a hash of its files, a hub id by its cached revision).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..serving.model_names import adapter_base, is_adapter_folder
from .faithkit_checker import ADAPTER, ADAPTERS
from .registry import faith_judge_lm, get_spec, option_defaults


def models_read(name: str, options: Mapping[str, object]) -> dict[str, str]:
    """``{role: model}`` for the metric ``name`` built with ``options`` (its constructor's keywords): each role
    ``"<metric> --<option>"`` as the command line names the option (``"q2 --qa-model"``), an adapter's base model as
    ``"<role> base"``. Models given as objects (not names) and the served model of ``llm-judge`` are not named here.

    Args:
        name (`str`): a metric's registry name.
        options (`Mapping[str, object]`): the options it is built with.

    Examples:

    ```python
    >>> from faithkit.metrics.model_roles import models_read
    >>> models_read("pmi-faith", {"model": "smollm2-135m"})
    {'pmi-faith --model': 'smollm2-135m'}
    >>> roles = models_read("faithkit-checker", {})  # its default: the shipped adapter, on its base model
    >>> list(roles), roles["faithkit-checker --nli-model base"]
    (['faithkit-checker --nli-model', 'faithkit-checker --nli-model base'], 'gemma3-270m')
    ```
    """
    spec = get_spec(name)
    given = {**option_defaults(name), **{key: value for key, value in options.items() if value is not None}}
    found: dict[str, object] = {}
    if "model" in spec.options:
        found["model"] = given.get("model") or (faith_judge_lm() if name == "faith-judge" else None)
    if name in ("q2", "e2e-nli"):  # Q²'s stage specs: "scoring:LM" reads LM, "checker" the shipped adapter
        from .q2.metric import PRESETS

        stages = PRESETS[given.get("preset")]
        for stage in ("qg", "qa", "nli") if name == "q2" else ("nli",):
            found[f"{stage}_model"] = _stage_model(str(given.get(f"{stage}_model") or stages[stage]))
    elif "window" in spec.options:  # the claim checkers
        from .claim_checkers import PRESETS as CHECKERS

        preset = CHECKERS[name]
        found["nli_model"] = given.get("nli_model") or (ADAPTERS[preset.adapter] if preset.three_way else preset.hub_id)
    roles: dict[str, str] = {}
    for option, model in found.items():
        if isinstance(model, (str, Path)):
            role = f"{name} --{option.replace('_', '-')}"
            roles[role] = str(model)
            if is_adapter_folder(Path(model).expanduser()):
                roles[f"{role} base"] = adapter_base(Path(model).expanduser())
    return roles


def _stage_model(spec: str) -> str | Path | None:
    from .q2.specs import named_model

    return ADAPTER if spec == "checker" else named_model(spec)


__all__ = ["models_read"]
