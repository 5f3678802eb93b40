"""Every metric by name: how to build it, which scores it gives, which options it takes.

The command line, report tables, meta-evaluations, sweeps and training hooks all read this
table, so adding a metric is one entry here.
"""

from __future__ import annotations

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


def _pmi_faith(**options):
    from .pmi_faith import PMIFaith

    return PMIFaith(**options)


def _q2(**options):  # imports spaCy: only when asked for
    from .q2 import Q2

    return Q2(**options)


def _e2e_nli(**options):
    from .nli import E2ENLI

    return E2ENLI(**options)


def _overlap(kind: str):
    def build(**options):
        from .lexical import TextOverlap

        return TextOverlap(kind=kind, **options)

    return build


def _lexical(**options):
    from .lexical import Lexical

    return Lexical(**options)


_LM_OPTIONS = ("batch_size", "device")
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in (
    MetricSpec("pmi-faith", _pmi_faith, ("pmi", "uncond_pmi"),
               ("model", *_LM_OPTIONS, "normalize", "max_length", "unconditional"),
               summary="PMI-FAITH: log P(r|d,h) - log P(r|h) under a causal LM"),
    MetricSpec("q2", _q2, ("q2", "q2_no_nli"), ("preset", "qg_model", "qa_model", "nli_model", *_LM_OPTIONS),
               summary="Q²: question generation, answering and NLI over response spans"),
    MetricSpec("e2e-nli", _e2e_nli, ("e2e_nli",), ("preset", "nli_model", *_LM_OPTIONS),
               summary="end-to-end NLI: does the document entail the response"),
    MetricSpec("overlap-f1", _overlap("overlap-f1"), ("overlap_f1",),
               summary="content-word F1 of response and document (baseline)"),
    MetricSpec("bleu", _overlap("bleu"), ("bleu",), summary="BLEU of the response against the document (baseline)"),
    MetricSpec("lexical", _lexical, ("knowledge_precision", "token_f1", "bleu"), needs_references=True,
               summary="knowledge precision; token F1 and BLEU against a reference response"),
)}
METRIC_NAMES = tuple(METRICS)


def get_spec(name: str) -> MetricSpec:
    if name not in METRICS:
        raise ConfigError(f"unknown metric '{name}'; choose one of {', '.join(METRIC_NAMES)}")
    return METRICS[name]


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
