"""Every metric by name: how to build it, which scores it gives, which options it takes.

The command line, report tables, meta-evaluations, sweeps and training hooks all read this
table, so adding a metric is one entry here.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name (as on the command line), builder, score keys (main score first) and options."""

    name: str
    build: Callable[..., object]
    score_keys: tuple[str, ...]
    options: tuple[str, ...] = ()
    needs_references: bool = False
    summary: str = ""


class _Lazy:
    """A metric class imported on first use (PMI-FAITH imports torch, Q² spaCy), with fixed arguments."""

    def __init__(self, module: str, name: str, **fixed):
        self.module, self.name, self.fixed = module, name, fixed

    def target(self) -> type:
        return getattr(importlib.import_module(f"{__package__}.{self.module}"), self.name)

    def __call__(self, **options):
        return self.target()(**self.fixed, **options)


_LM_OPTIONS = ("batch_size", "device")
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in (
    MetricSpec("pmi-faith", _Lazy("pmi_faith", "PMIFaith"), ("pmi", "uncond_pmi"),
               ("model", *_LM_OPTIONS, "normalize", "max_length", "unconditional"),
               summary="PMI-FAITH: log P(r|d,h) - log P(r|h) under a causal LM"),
    MetricSpec("q2", _Lazy("q2", "Q2"), ("q2", "q2_no_nli"), ("preset", "qg_model", "qa_model", "nli_model", *_LM_OPTIONS),
               summary="Q²: question generation, answering and NLI over response spans"),
    MetricSpec("e2e-nli", _Lazy("nli", "E2ENLI"), ("e2e_nli",), ("preset", "nli_model", *_LM_OPTIONS),
               summary="end-to-end NLI: does the document entail the response"),
    MetricSpec("overlap-f1", _Lazy("lexical", "TextOverlap", kind="overlap-f1"), ("overlap_f1",),
               summary="content-word F1 of response and document (baseline)"),
    MetricSpec("bleu", _Lazy("lexical", "TextOverlap", kind="bleu"), ("bleu",), summary="BLEU of the response against the document (baseline)"),
    MetricSpec("lexical", _Lazy("lexical", "Lexical"), ("knowledge_precision", "token_f1", "bleu"), needs_references=True,
               summary="knowledge precision; token F1 and BLEU against a reference response"),
)}
METRIC_NAMES = tuple(METRICS)


def get_spec(name: str) -> MetricSpec:
    if name not in METRICS:
        raise ConfigError(f"unknown metric '{name}'; choose one of {', '.join(METRIC_NAMES)}")
    return METRICS[name]


def option_defaults(name: str) -> dict:
    """The metric's options with their constructor defaults, so a setting given at its default is the setting
    left out (job fingerprints compare them)."""
    spec = get_spec(name)
    parameters = inspect.signature(spec.build.target()).parameters
    return {key: parameters[key].default for key in spec.options
            if key in parameters and parameters[key].default is not inspect.Parameter.empty}


def check_options(name: str, options: Iterable[str]) -> MetricSpec:
    """The metric's spec; a ConfigError if it is unknown or does not take one of ``options``."""
    spec = get_spec(name)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise ConfigError(f"metric '{name}' takes no option {', '.join(unknown)}; its options are "
                          f"{', '.join(spec.options) or 'none'}")
    return spec


def load_metric(name: str, **options):
    """Build a metric by name; ``options`` are its constructor's keyword arguments (see ``MetricSpec.options``)."""
    return check_options(name, options).build(**options)


def load_metrics(names: Iterable[str], options: dict[str, dict] | None = None) -> dict[str, object]:
    """Several metrics by name, each with its own options: ``{"pmi-faith": {"model": "gemma3-270m"}}``."""
    names = list(dict.fromkeys(names))
    options = options or {}
    for name in [*names, *options]:
        get_spec(name)
    extra = sorted(set(options) - set(names))
    if extra:
        raise ConfigError(f"options given for metrics not asked for: {', '.join(extra)}")
    return {name: load_metric(name, **options.get(name, {})) for name in names}
