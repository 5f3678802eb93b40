"""Every metric by name: how to build it, which scores it gives, which options it takes.

The command line, report tables, meta-evaluations, sweeps and training hooks all read this
table, so adding a metric is one entry here. A metric's :class:`Measure` entries are the
corpus-level numbers it gives (title, direction, aggregate): a sweep's columns, tables,
heatmaps and choice of operating point are made of them and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import ConfigError


@dataclass(frozen=True)
class Measure:
    """One corpus-level number from a per-response field ``key`` of a metric's rows.

    ``name`` is its column (unique over the registry), ``title`` its display name,
    ``higher_is_better`` its direction (None: neither, e.g. length), ``aggregate`` a name in
    :data:`faithkit.metrics.corpus.AGGREGATES` (``mean`` over responses with a value, or
    ``corpus_bleu`` of the responses against their references).
    """

    name: str
    key: str
    title: str
    higher_is_better: bool | None = True
    aggregate: str = "mean"


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name (as on the command line), builder, score keys (main score first), options and measures."""

    name: str
    build: Callable[..., object]
    score_keys: tuple[str, ...]
    options: tuple[str, ...] = ()
    needs_references: bool = False
    summary: str = ""
    measures: tuple[Measure, ...] = ()

    @property
    def needs_model(self) -> bool:
        """Whether it runs a model (and so is worth scoring into a resumable file)."""
        return "device" in self.options


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


def _form(**options):
    from .lexical import ResponseForm

    return ResponseForm(**options)


_LM_OPTIONS = ("batch_size", "device")
METRICS: dict[str, MetricSpec] = {spec.name: spec for spec in (
    MetricSpec("pmi-faith", _pmi_faith, ("pmi", "uncond_pmi"),
               ("model", *_LM_OPTIONS, "normalize", "max_length", "unconditional"),
               summary="PMI-FAITH: log P(r|d,h) - log P(r|h) under a causal LM",
               measures=(Measure("pmi_faith", "pmi", "PMI-FAITH (judge)"),
                         # the judge's mean token log P(r | h), which PMI-FAITH computes anyway: low for word salad
                         Measure("fluency", "logp_history", "fluency: judge log P(r | h) per token"))),
    MetricSpec("q2", _q2, ("q2", "q2_no_nli"), ("preset", "qg_model", "qa_model", "nli_model", *_LM_OPTIONS),
               summary="Q²: question generation, answering and NLI over response spans",
               measures=(Measure("q2", "q2", "Q²"), Measure("q2_no_nli", "q2_no_nli", "Q² without NLI"))),
    MetricSpec("e2e-nli", _e2e_nli, ("e2e_nli",), ("preset", "nli_model", *_LM_OPTIONS),
               summary="end-to-end NLI: does the document entail the response",
               measures=(Measure("e2e_nli", "e2e_nli", "end-to-end NLI"),)),
    MetricSpec("overlap-f1", _overlap("overlap-f1"), ("overlap_f1",),
               summary="content-word F1 of response and document (baseline)",
               measures=(Measure("overlap_f1", "overlap_f1", "overlap F1 with the document"),)),
    MetricSpec("bleu", _overlap("bleu"), ("bleu",), summary="BLEU of the response against the document (baseline)",
               measures=(Measure("knowledge_bleu", "bleu", "BLEU vs document"),)),
    MetricSpec("lexical", _lexical, ("knowledge_precision", "token_f1", "bleu"), needs_references=True,
               summary="knowledge precision; token F1 and BLEU against a reference response",
               measures=(Measure("knowledge_precision", "knowledge_precision", "knowledge precision"),
                         Measure("bleu", "bleu", "BLEU vs gold", aggregate="corpus_bleu"),
                         Measure("token_f1", "token_f1", "token F1 vs gold"))),
    MetricSpec("form", _form, ("words", "empty", "repeated"),
               summary="words per response, and the shares of empty and looping responses (no model)",
               measures=(Measure("words", "words", "mean words", higher_is_better=None),
                         Measure("empty", "empty", "share empty", higher_is_better=False),
                         Measure("repeated", "repeated", "share repeated", higher_is_better=False))),
)}
METRIC_NAMES = tuple(METRICS)
MEASURES: dict[str, tuple[MetricSpec, Measure]] = {
    measure.name: (spec, measure) for spec in METRICS.values() for measure in spec.measures}
"""Every measure by its (unique) name, with the metric that gives it."""


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
