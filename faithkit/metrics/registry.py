"""Every metric by name: how to build it, which scores it gives, which options it takes.

The command line, report tables, meta-evaluations, sweeps and training hooks all read this
table, so adding a metric is one entry here (and any option it adds, one field of
:class:`~faithkit.metrics.metric_options.MetricOptions`). A metric's :class:`Measure` entries are the
corpus-level numbers it gives (title, aggregate): a sweep's columns, tables,
heatmaps and choice of operating point are made of them and nothing else.

Every key a metric's rows give that anything here reads (its score keys, its measures' keys)
declares its direction once, in :attr:`MetricSpec.directions`: higher is better (more faithful,
more fluent), lower is better (``faithkit_checker_hallucination``, a contrast margin), or neither
(words per response). Meta-evaluations, the sweep's choice, rerank and tables read it there.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..settings.numbers import check_finite
from .base import Metric
from .metric_options import check_option_values

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Measure:
    """One corpus-level number from a per-response field ``key`` of a metric's rows.

    ``name`` is its column (unique over the registry), ``title`` its display name, ``aggregate`` a name in
    :data:`faithkit.metrics.corpus.AGGREGATES` (``mean`` over responses with a value, or ``corpus_bleu`` of the
    responses against their references). ``higher_is_better`` is its key's direction as its metric declares it
    (:attr:`MetricSpec.directions`), filled in by the :class:`MetricSpec` that holds it.

    Args:
        name (`str`): its column.
        key (`str`): the per-response field it is made of.
        title (`str`): its display name.
        aggregate (`str`, defaults to "mean"): how the responses' values become one number.

    Examples:

    ```python
    >>> from faithkit.metrics import get_spec
    >>> get_spec("form").measures[2]
    Measure(name='repeated', key='repeated', title='share repeated', aggregate='mean', higher_is_better=False)
    ```
    """

    name: str
    key: str
    title: str
    aggregate: str = "mean"
    higher_is_better: bool | None = field(default=None, init=False)


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name (as on the command line), builder, score keys (main score first), the direction of each of
    its keys, options and measures.

    ``directions`` maps every score key and every measure's key to True (higher is better: more faithful), False
    (lower is better) or None (neither, e.g. words per response); a key left out or one that is neither is an
    error when the registry is built.

    Args:
        name (`str`): as on the command line.
        build (`Callable`): makes the metric from its options (its class, imported on first use).
        score_keys (`tuple[str, ...]`): the per-response scores, main score first.
        options (`tuple[str, ...]`, defaults to ()): the constructor options the command line may pass.
        needs_references (`bool`, defaults to False): whether it reads gold responses.
        summary (`str`, defaults to ""): one line for tables and ``--help``.
        measures (`tuple[Measure, ...]`, defaults to ()): its corpus-level numbers.
        directions (`Mapping[str, bool | None]`, keyword only): each score and measure key's direction.

    Examples:

    ```python
    >>> from faithkit.metrics import get_spec
    >>> spec = get_spec("pmi-faith")
    >>> spec.score_keys, spec.directions["pmi"], spec.runs_on_device
    (('pmi', 'uncond_pmi'), True, True)
    ```
    """

    name: str
    build: _Lazy
    score_keys: tuple[str, ...]
    options: tuple[str, ...] = ()
    needs_references: bool = False
    summary: str = ""
    measures: tuple[Measure, ...] = ()
    directions: Mapping[str, bool | None] = field(kw_only=True)

    def __post_init__(self):
        keys = {*self.score_keys, *(measure.key for measure in self.measures)}
        if set(self.directions) != keys:
            missing, extra = sorted(keys - set(self.directions)), sorted(set(self.directions) - keys)
            raise ValueError(
                f"metric '{self.name}': directions must name each score and measure key once "
                f"(missing: {', '.join(missing) or 'none'}; not a key: {', '.join(extra) or 'none'})"
            )
        for measure in self.measures:
            object.__setattr__(measure, "higher_is_better", self.directions[measure.key])

    @property
    def ranking_key(self) -> tuple[str, int]:
        """``(key, sign)``: the score a judge ranks responses by, and +1 (higher is more faithful) or -1 (lower is):
        the first score key declared higher-is-better, else the first declared lower-is-better."""
        for wanted, sign in ((True, 1), (False, -1)):
            key = next((key for key in self.score_keys if self.directions[key] is wanted), None)
            if key is not None:
                return key, sign
        raise ConfigError(f"metric '{self.name}' has no score with a direction to rank responses by")

    @property
    def runs_on_device(self) -> bool:
        """Whether it runs a model, on a ``device`` here or on a ``server`` (and so is worth scoring into a
        resumable file), where the lexical metrics run in a moment on the CPU."""
        return "device" in self.options or "server" in self.options


class _Lazy:
    """A metric class imported on first use (PMI-FAITH imports torch, Q² spaCy), with fixed arguments."""

    def __init__(self, module: str, name: str, **fixed):
        self.module, self.name, self.fixed = module, name, fixed

    def target(self) -> type[Metric]:
        return getattr(importlib.import_module(f"{__package__}.{self.module}"), self.name)

    def __call__(self, **options) -> Metric:
        return self.target()(**self.fixed, **options)


_LM_OPTIONS = ("batch_size", "device", "dtype")


def _claim_checker_specs() -> tuple[MetricSpec, ...]:
    """One metric per claim-checker preset (:mod:`.claim_checkers`, which imports nothing heavy)."""
    from .claim_checkers import PRESETS

    def summary(preset) -> str:
        if preset.three_way:
            return (
                f"faithkit's offline claim checker ({preset.hub_id}): P(faithful) read from P(supported), "
                "P(generic), P(unsupported) of each sentence's best window and the response's worst sentence, "
                "a verdict, and which sentence failed"
            )
        combined = "the worst sentence" if preset.sentences == "min" else "sentences averaged"
        return f"claim checker {preset.hub_id}: each sentence's best document window, {combined}"

    return tuple(
        MetricSpec(
            name,
            _Lazy("claim_checkers", "ClaimChecker", preset=name),
            preset.score_keys,
            ("nli_model", "window", "stride", "max_windows", *_LM_OPTIONS),
            summary=summary(preset),
            directions=preset.directions,
            measures=(Measure(preset.score_key, preset.score_key, f"claim checker: {name}"),),
        )
        for name, preset in PRESETS.items()
    )


METRICS: dict[str, MetricSpec] = {
    spec.name: spec
    for spec in (
        MetricSpec(
            "pmi-faith",
            _Lazy("pmi_faith", "PMIFaith"),
            ("pmi", "uncond_pmi"),
            ("model", *_LM_OPTIONS, "normalize", "max_length", "unconditional"),
            summary="PMI-FAITH: log P(r|d,h) - log P(r|h) under a causal LM",
            directions={"pmi": True, "uncond_pmi": True, "logp_history": True},
            measures=(
                Measure("pmi_faith", "pmi", "PMI-FAITH (judge)"),
                # the judge's mean token log P(r | h), which PMI-FAITH computes anyway: low for word salad
                Measure("fluency", "logp_history", "fluency: judge log P(r | h) per token"),
            ),
        ),
        MetricSpec(
            "minimal-edit",
            _Lazy("minimal_edit", "MinimalEdit"),
            ("minimal_edit", "contrast_logp_margin", "contrast_pmi_margin"),
            ("model", *_LM_OPTIONS, "max_edits", "threshold"),
            summary="minimal-edit contrast: does the document make a response with a span swapped likelier",
            # a margin is how much likelier the best edit is than the response: large means unfaithful
            directions={"minimal_edit": True, "contrast_logp_margin": False, "contrast_pmi_margin": False},
            measures=(Measure("minimal_edit", "minimal_edit", "minimal-edit contrast (judge)"),),
        ),
        MetricSpec(
            "faith-judge",
            _Lazy("faith_judge", "FaithJudge"),
            ("faith_judge",),
            ("model", *_LM_OPTIONS, "max_length"),
            summary="faithfulness judge: logistic regression on PMI-FAITH's token evidence and word overlap, "
            "fitted on BEGIN dev",
            directions={"faith_judge": True},
            measures=(Measure("faith_judge", "faith_judge", "faithfulness judge"),),
        ),
        MetricSpec(
            "q2",
            _Lazy("q2.metric", "Q2"),
            ("q2", "q2_no_nli"),
            ("preset", "qg_model", "qa_model", "nli_model", *_LM_OPTIONS),
            summary="Q²: question generation, answering and NLI over response spans",
            directions={"q2": True, "q2_no_nli": True},
            measures=(Measure("q2", "q2", "Q²"), Measure("q2_no_nli", "q2_no_nli", "Q² without NLI")),
        ),
        MetricSpec(
            "e2e-nli",
            _Lazy("e2e_nli", "E2ENLI"),
            ("e2e_nli",),
            ("preset", "nli_model", *_LM_OPTIONS),
            summary="end-to-end NLI: does the document entail the response",
            directions={"e2e_nli": True},
            measures=(Measure("e2e_nli", "e2e_nli", "end-to-end NLI"),),
        ),
        *_claim_checker_specs(),
        MetricSpec(
            "llm-judge",
            _Lazy("llm_judge", "LLMJudge"),
            ("llm_judge",),
            ("server", "served_model", "api_key"),
            summary="a model served over an OpenAI-compatible API asked the annotation page's faithfulness "
            "question; agree 1, neutral 0.5, disagree 0, weighted by the answers' log-probabilities where served",
            directions={"llm_judge": True},
            measures=(Measure("llm_judge", "llm_judge", "LLM judge (served)"),),
        ),
        MetricSpec(
            "overlap-f1",
            _Lazy("lexical", "TextOverlap", kind="overlap-f1"),
            ("overlap_f1",),
            summary="content-word F1 of response and document (baseline)",
            directions={"overlap_f1": True},
            measures=(Measure("overlap_f1", "overlap_f1", "overlap F1 with the document"),),
        ),
        MetricSpec(
            "document-bleu",
            _Lazy("lexical", "TextOverlap", kind="document-bleu"),
            ("document_bleu",),
            summary="BLEU of the response against the document (baseline; not lexical's bleu, against the gold)",
            directions={"document_bleu": True},
            measures=(Measure("document_bleu", "document_bleu", "BLEU vs document"),),
        ),
        MetricSpec(
            "lexical",
            _Lazy("lexical", "Lexical"),
            ("knowledge_precision", "token_f1", "bleu"),
            needs_references=True,
            summary="knowledge precision; token F1 and BLEU against a reference response",
            directions={"knowledge_precision": True, "token_f1": True, "bleu": True},
            measures=(
                Measure("knowledge_precision", "knowledge_precision", "knowledge precision"),
                Measure("bleu", "bleu", "BLEU vs gold", aggregate="corpus_bleu"),
                Measure("token_f1", "token_f1", "token F1 vs gold"),
            ),
        ),
        MetricSpec(
            "form",
            _Lazy("lexical", "ResponseForm"),
            ("words", "empty", "repeated"),
            summary="words per response, and the shares of empty and looping responses (no model)",
            directions={"words": None, "empty": False, "repeated": False},
            measures=(
                Measure("words", "words", "mean words"),
                Measure("empty", "empty", "share empty"),
                Measure("repeated", "repeated", "share repeated"),
            ),
        ),
    )
}
METRIC_NAMES = tuple(METRICS)
MEASURES: dict[str, tuple[MetricSpec, Measure]] = {
    measure.name: (spec, measure) for spec in METRICS.values() for measure in spec.measures
}
"""Every measure by its (unique) name, with the metric that gives it."""


FAITH_JUDGE_WEIGHTS = Path(__file__).with_name("judge_weights.json")
"""faith-judge's shipped weights (:mod:`.faith_judge` fits and reads them)."""


def faith_judge_lm() -> str:
    """The judge LM faith-judge's shipped weights were fitted with, read without importing the judge (numpy, scipy).

    Examples:

    ```python
    >>> from faithkit.metrics.registry import faith_judge_lm
    >>> faith_judge_lm()
    'smollm2-135m'
    ```
    """
    from ..data.schema import TEXT, Object, read_json_file

    return read_json_file(FAITH_JUDGE_WEIGHTS, Object({"model": TEXT}), "reinstall faithkit")["model"]


def metric_names(names, allowed: Sequence[str] = METRIC_NAMES) -> tuple[str, ...]:
    """The metrics ``names`` (a list, or comma-separated text as flags and config files write them), each once. The
    one reader of metric lists, for flags and config keys alike: a name not of
    ``allowed`` is an ``argparse.ArgumentTypeError``, so a flag says ``argument --metrics: must be one of …``.

    Args:
        names (`str` or `Iterable[str]`): the metrics.
        allowed (`Sequence[str]`, defaults to `METRIC_NAMES`): the names accepted.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import metric_names
    >>> metric_names("pmi-faith, lexical,pmi-faith")
    ('pmi-faith', 'lexical')
    >>> metric_names("pmi", allowed=("pmi-faith", "lexical"))
    Traceback (most recent call last):
      ...
    argparse.ArgumentTypeError: must be one of pmi-faith, lexical, got 'pmi'
    ```
    """
    import argparse

    given = names.split(",") if isinstance(names, str) else names
    current = tuple(dict.fromkeys(str(name).strip() for name in given if str(name).strip()))
    unknown = [name for name in current if name not in allowed]
    if unknown or not current:
        got = repr(unknown[0]) if unknown else "none"
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(allowed)}, got {got}")
    return current


def metric_name(text: str) -> str:
    """The argparse type of a flag naming one metric (``--metric``): :func:`metric_names` of one.

    Args:
        text (`str`): the flag's value.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import metric_name
    >>> metric_name(" form ")
    'form'
    ```
    """
    [name] = metric_names([text])
    return name


def get_spec(name: str) -> MetricSpec:
    """The metric ``name``; a ConfigError naming the metrics for an unknown one.

    Args:
        name (`str`): a name of :data:`METRICS`.

    Examples:

    ```python
    >>> from faithkit.metrics import get_spec
    >>> get_spec("form").summary
    'words per response, and the shares of empty and looping responses (no model)'
    >>> get_spec("bleu")
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: unknown metric 'bleu'; choose one of pmi-faith, minimal-edit, faith-judge, q2, e2e-nli, nli-roberta-large-mnli, minicheck-roberta-large, minicheck-deberta-v3-large, minicheck-flan-t5-large, hhem-2.1-open, alignscore-style, faithkit-checker, faithkit-checker-smollm2, faithkit-checker-gemma, llm-judge, overlap-f1, document-bleu, lexical, form
    ```
    """
    if name not in METRICS:
        raise ConfigError(f"unknown metric '{name}'; choose one of {', '.join(METRIC_NAMES)}")
    return METRICS[name]


def score_direction(score: str) -> bool | None:
    """The declared direction (:attr:`MetricSpec.directions`) of a score as reports name it: a key of some metric
    (``faithkit_checker_hallucination``: False) or ``metric:key``; None for a key no metric declares.

    Args:
        score (`str`): a score key, or ``metric:key``.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import score_direction
    >>> score_direction("pmi"), score_direction("form:repeated"), score_direction("no_such_key")
    (True, False, None)
    ```
    """
    metric, _, key = score.rpartition(":")
    specs = [get_spec(metric)] if metric else list(METRICS.values())
    return next((spec.directions[key] for spec in specs if key in spec.directions), None)


def option_defaults(name: str) -> dict:
    """The metric's options with their constructor defaults, so a setting given at its default is the setting
    left out (job fingerprints compare them).

    Args:
        name (`str`): a name of :data:`METRICS`.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import option_defaults
    >>> option_defaults("pmi-faith")
    {'model': 'bigscience/bloom-560m', 'batch_size': 8, 'device': None, 'dtype': None, 'normalize': 'mean', 'max_length': None, 'unconditional': True}
    ```
    """
    spec = get_spec(name)
    builder = spec.build.target() if isinstance(spec.build, _Lazy) else spec.build  # a plain callable: its own
    parameters = inspect.signature(builder).parameters
    return {
        key: parameters[key].default
        for key in spec.options
        if key in parameters and parameters[key].default is not inspect.Parameter.empty
    }


MODEL_OPTIONS = ("model", "qg_model", "qa_model", "nli_model")
"""Metric options that name a model: a fingerprint holds the model's identity (:func:`faithkit.serving.models.identity`)."""
RUN_OPTIONS = ("device", "batch_size", "server", "api_key")
"""Metric options that change where and how fast a metric runs (or, the API key, who may), not its scores: no part
of a fingerprint. A served model is in it by the id its server gives it."""


def metric_fingerprint(name: str, options: Mapping) -> dict:
    """The metric part of a job fingerprint: ``{"metric": name, "metric_options": ...}`` with the options that change
    a score. An option at its default is left out (given or not, it is the same setting), a model is its identity
    (a served one's, its server's model id: the server is asked), and the :data:`RUN_OPTIONS` are dropped.

    Args:
        name (`str`): a name of :data:`METRICS`.
        options (`Mapping`): the options given.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import metric_fingerprint
    >>> metric_fingerprint("pmi-faith", {"batch_size": 4, "normalize": "sum", "unconditional": True})
    {'metric': 'pmi-faith', 'metric_options': {'normalize': 'sum'}}
    ```
    """
    defaults = option_defaults(name)
    kept = {
        key: value
        for key, value in options.items()
        if key not in RUN_OPTIONS and (key not in defaults or value != defaults[key])
    }
    for key in MODEL_OPTIONS:
        if key in kept:
            from ..serving import models  # imports torch: only when a model is named

            kept[key] = models.identity(kept[key])
    spec = get_spec(name)
    if "server" in spec.options:
        from .llm_judge import served_engine

        kept["served_model"] = served_engine(
            options.get("server"), options.get("served_model"), options.get("api_key")
        ).model
    return {"metric": spec.name, "metric_options": kept}


def check_options(name: str, options: Iterable[str]) -> MetricSpec:
    """The metric's spec; a ConfigError if it is unknown, does not take one of ``options`` or (given as a mapping) one
    of their values is NaN, infinite or refused by its declaration (:class:`~faithkit.metrics.metric_options.MetricOptions`).

    Args:
        name (`str`): a name of :data:`METRICS`.
        options (`Iterable[str]` or `Mapping`): the options' names, or the options with their values.

    Examples:

    ```python
    >>> from faithkit.metrics.registry import check_options
    >>> check_options("lexical", {"model": "smollm2-135m"})
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: metric 'lexical' takes no option model; its options are none
    >>> check_options("pmi-faith", {"batch_size": 0})
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: metric 'pmi-faith' option batch_size must be at least 1, got 0
    ```
    """
    spec = get_spec(name)
    for key, value in options.items() if isinstance(options, Mapping) else ():
        check_finite(value, f"metric '{name}' option {key}")
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise ConfigError(
            f"metric '{name}' takes no option {', '.join(unknown)}; its options are {', '.join(spec.options) or 'none'}"
        )
    if isinstance(options, Mapping):
        check_option_values(f"metric '{name}' option ", **options)
    return spec


def check_scores(records: Iterable[dict], source, keys: Iterable[str] | None = None) -> None:
    """Every score field a scores file read back holds (``keys``, default: every registered metric's) is a number
    or null (undefined); otherwise an InputError naming the file, the record and the field, as a hand-edited file
    would have it.

    Args:
        records (`Iterable[dict]`): the file's records.
        source (`str` or `Path`): the file, for the message.
        keys (`Iterable[str]`, *optional*): the score fields to check (default: every registered metric's).

    Examples:

    ```python
    >>> from faithkit.metrics.registry import check_scores
    >>> check_scores([{"id": "r1", "pmi": "high"}], "scores.jsonl")
    Traceback (most recent call last):
      ...
    faithkit.errors.InputError: scores.jsonl: record 'r1' has pmi "high" where a number (or null) is expected; fix the file, or score its rows again
    ```
    """
    from ..errors import InputError

    keys = set(keys or (key for spec in METRICS.values() for key in spec.score_keys))
    for record in records:
        for key in keys & record.keys():
            value = record[key]
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InputError(
                    f"{source}: record '{record.get('id')}' has {key} {json.dumps(value)[:40]} where a "
                    f"number (or null) is expected; fix the file, or score its rows again"
                )


def load_metric(name: str, **options):
    """Build a metric by name, its options checked first (before a model loads).

    Args:
        name (`str`): a name of :data:`METRICS`.
        **options (`Any`): its constructor's keyword arguments (:attr:`MetricSpec.options`).

    Examples:

    ```python
    >>> from faithkit.metrics import load_metric
    >>> metric = load_metric("overlap-f1")
    >>> metric.compute(documents=["Emperor penguins live only in Antarctica."], responses=["They live in Antarctica."])
    {'overlap_f1': [0.6666666666666666], 'mean_overlap_f1': 0.6666666666666666}
    ```
    """
    return check_options(name, options).build(**options)


def load_metrics(names: Iterable[str], options: dict[str, dict] | None = None) -> dict[str, object]:
    """Several metrics by name, each with its own options, all checked before any is built.

    Args:
        names (`Iterable[str]`): the metrics.
        options (`dict[str, dict]`, *optional*): each metric's options by its name, e.g.
            ``{"pmi-faith": {"model": "gemma3-270m"}}``.

    Examples:

    ```python
    >>> from faithkit.metrics import load_metrics
    >>> {name: type(metric).__name__ for name, metric in load_metrics(["form", "lexical"]).items()}
    {'form': 'ResponseForm', 'lexical': 'Lexical'}
    >>> load_metrics(["form"], {"lexical": {}})
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: options given for metrics not asked for: lexical
    ```
    """
    names = list(dict.fromkeys(names))
    options = options or {}
    for name in [*names, *options]:
        get_spec(name)
    extra = sorted(set(options) - set(names))
    if extra:
        raise ConfigError(f"options given for metrics not asked for: {', '.join(extra)}")
    return {name: load_metric(name, **options.get(name, {})) for name in names}
