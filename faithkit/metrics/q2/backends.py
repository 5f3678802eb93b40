"""The three model stages of Q² — question generation, question answering, NLI — as swappable backends.

Each backend takes whole lists and batches them itself, so the pipeline makes one batched
call per stage (and per ``batch_size`` rows), never one call per span: what each stage's backend offers is its
protocol in :mod:`.stages` (:class:`QuestionGenerator`, :class:`QuestionAnswerer`, :class:`NLIClassifier`).

* Hub backends (:mod:`.hub`) run the paper's models (:class:`T5QuestionGenerator`,
  :class:`ExtractiveQA`, :class:`SequenceClassificationNLI`).
* Offline backends (:mod:`.offline`) approximate them with a small causal LM or with rules, so Q² runs
  without the hub: :class:`RuleQuestionGenerator`, :class:`FewShotQuestionGenerator`,
  :class:`SpanScoringQA`, :class:`LabelWordNLI` and :class:`CheckerNLI` (faithkit's claim checker). They are
  approximations: the measurements in ``benchmarks/q2_offline_stages.py`` say how good,
  and chose the offline preset: rules for QG, ``scoring:smollm2-135m`` for QA,
  ``checker`` (the shipped claim checker) for NLI.

:func:`build_backend` turns a spec string into a backend: a hub id or local folder for the
hub backends, or ``"rules"`` / ``"fewshot:LM"`` (QG), ``"scoring:LM"`` (QA), ``"labels:LM"``,
``"checker"`` / ``"checker:ADAPTER"`` (NLI) for the offline ones, where ``LM`` is any name
:func:`faithkit.serving.models.load` accepts and ``ADAPTER`` a folder ``faithkit checker train`` wrote.
"""

from __future__ import annotations

from collections.abc import Callable

from ...serving import models
from ...errors import ConfigError
from .hub import ExtractiveQA, SequenceClassificationNLI, T5QuestionGenerator
from .offline import (
    CheckerNLI,
    FewShotQuestionGenerator,
    LabelWordNLI,
    RuleQuestionGenerator,
    SpanScoringQA,
    _CausalLM,
)
from .specs import NAMING_NO_MODEL, OFFLINE_METHODS
from .stages import (
    STAGES,
)

__all__ = ["build_backend"]


def build_backend(
    stage: str,
    spec,
    *,
    device=None,
    batch_size=8,
    dtype=None,
    nlp=None,
    load_lm: Callable[[str], _CausalLM] | None = None,
):
    """Turn a spec (hub id, local folder, ``"method:LM"``, ``"rules"``, or a ready backend) into a backend for ``stage``.

    Args:
        stage (`str`): ``qg``, ``qa`` or ``nli``.
        spec (`str` or backend): the model or method; a backend object is checked against the stage's protocol.
        device (`str`, *optional*): where a model loaded here runs.
        batch_size (`int`, defaults to 8): inputs per forward pass.
        dtype (`str`, *optional*): a loaded model's precision.
        nlp (`spacy.Language`, *optional*): the pipeline the span-scoring answerer reads candidates with.
        load_lm (`Callable[[str], _CausalLM]`, *optional*): loads an offline LM by name (Q² shares one per name).

    Examples:

    ```python
    >>> from faithkit.metrics.q2.backends import build_backend
    >>> type(build_backend("qg", "rules")).__name__
    'RuleQuestionGenerator'
    >>> build_backend("qa", 3)
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: qa_model: a int is no QuestionAnswerer (faithkit.metrics.q2.stages names the method it needs); pass a hub id, an offline spec, or a backend of faithkit.metrics.q2.backends
    ```
    """
    if not isinstance(spec, str):
        if not isinstance(spec, STAGES[stage]):
            protocol = STAGES[stage].__name__
            raise ConfigError(
                f"{stage}_model: a {type(spec).__name__} is no {protocol} (faithkit.metrics.q2.stages names the "
                f"method it needs); pass a hub id, an offline spec, or a backend of faithkit.metrics.q2.backends"
            )
        return spec
    load_lm = load_lm or (lambda name: _CausalLM(*models.load(name, device=device, dtype=dtype)))
    method, _, lm_name = spec.partition(":")
    if stage == "qa" and method == "constrained":
        raise ValueError(
            f"qa_model={spec!r}: span-constrained decoding was removed (it gave a valid question for 0.019 "
            "of the spans, benchmarks/q2_offline_stages.py); use 'scoring:LM'"
        )
    if stage == "qg" and spec == "rules":
        return RuleQuestionGenerator()
    if stage == "nli" and method == "checker":
        return CheckerNLI(lm_name or None, device=device, batch_size=batch_size, dtype=dtype)
    if method in OFFLINE_METHODS[stage] and lm_name:
        if method == "fewshot":
            return FewShotQuestionGenerator(load_lm(lm_name), batch_size=batch_size)
        if method == "scoring":
            return SpanScoringQA(load_lm(lm_name), nlp, batch_size=batch_size)
        return LabelWordNLI(load_lm(lm_name), batch_size=batch_size)
    if any(spec.startswith(f"{m}:") for methods in OFFLINE_METHODS.values() for m in methods):
        raise ValueError(
            f"{stage}_model={spec!r}: method {method!r} is not a {stage.upper()} method; "
            f"use one of {[m + (':ADAPTER' if m == 'checker' else ':LM') for m in OFFLINE_METHODS[stage]]}"
            + "".join(f' or "{m}"' for m in OFFLINE_METHODS[stage] if m in NAMING_NO_MODEL)
        )
    if stage == "qg":
        return T5QuestionGenerator(spec, device=device, batch_size=batch_size, dtype=dtype)
    if stage == "qa":
        return ExtractiveQA(spec, device=device, batch_size=batch_size, dtype=dtype)
    return SequenceClassificationNLI(spec, device=device, batch_size=batch_size, dtype=dtype)
