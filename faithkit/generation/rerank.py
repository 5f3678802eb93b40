"""The judges of the ``rerank`` strategy, and reranking candidates that another engine drew (``faithkit rerank``).

:class:`Judges` turns a rerank strategy's ``judge`` (a metric name of
:mod:`faithkit.metrics.registry`) into the :data:`~faithkit.decoding.rerank.Judge` callable
that :func:`faithkit.decoding.iter_grid` calls: ``pmi-faith`` is the generator itself as
PMI-FAITH judge, in the prompt layout it decoded with, and also gives every response's
fluency (its mean token log P(r | h)) from the same prefix-sharing scorer call. Any other
metric is built with its own defaults (or the options given for it) and scores the same responses;
the fluency then comes from the generator's PMI-FAITH pass. The score is the metric's ranking key
(:attr:`~faithkit.metrics.registry.MetricSpec.ranking_key`) turned so that higher is more faithful.

:class:`CandidatesJob` is the row computation of ``faithkit rerank``: the candidates come from
a file (``{"id", "responses": [...]}`` per row, as any serving engine can write them), the
greedy response from the file's ``greedy`` field or else from the generator, and the choice is
:func:`faithkit.decoding.rerank.rerank`'s, so it is the strategy's choice on the same candidates.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..data import Row, reference_of
from ..decoding.rerank import FLUENCY_VIEWS, Rerank, faithful_score, rerank, why_chosen
from ..errors import ConfigError, InputError
from ..metrics.registry import get_spec, load_metric
from ..data.schema import ID, TEXT, ListOf, Object, check_schema, read_json_line

logger = logging.getLogger(__name__)


class Judges:
    """Rerank judges by metric name, each built on first use; ``judges(strategy, documents, histories, responses)``
    gives one ``(score, fluency)`` per response (None for an empty response, which no judge can score).

    ``template``: the prompt layout the generator decoded with (default: the one decoding picks for it);
    ``options``: a judge metric's options by its name (``{"e2e-nli": {"preset": "offline"}}``), checked here.
    """

    def __init__(self, model, tokenizer, template=None, batch_size: int = 8, device=None, options=None):
        from ..decoding import default_template
        from ..metrics.registry import check_options

        self.model, self.tokenizer, self.batch_size, self.device = model, tokenizer, batch_size, device
        self.template = template or default_template(model, tokenizer)
        self.options: dict[str, dict] = {name: dict(given) for name, given in (options or {}).items()}
        for name, given in self.options.items():
            check_options(name, given)
        self._metrics: dict[str, object] = {}

    def metric(self, name: str):
        """The metric ``name``: pmi-faith under the generator, any other with its options (on ``device``)."""
        if name not in self._metrics:
            spec = get_spec(name)
            if name == "pmi-faith":
                from ..metrics.pmi_faith import PMIFaith

                self._metrics[name] = PMIFaith(
                    model=self.model,
                    tokenizer=self.tokenizer,
                    template=self.template,
                    unconditional=False,
                    batch_size=self.batch_size,
                )
            else:
                placed = {"device": self.device} if "device" in spec.options else {}
                self._metrics[name] = load_metric(name, **{**placed, **self.options.get(name, {})})
        return self._metrics[name]

    def __call__(
        self, strategy: Rerank, documents: Sequence[str], histories: Sequence, responses: Sequence[str]
    ) -> list[tuple[float | None, float | None]]:
        scored = [i for i, response in enumerate(responses) if response.strip()]
        columns = [[column[i] for i in scored] for column in (documents, histories, responses)]
        values: list[tuple[float | None, float | None]] = [(None, None)] * len(responses)
        if not scored:
            return values
        fluency_rows = self.metric("pmi-faith").compute_rows(*columns)
        judged_rows = (
            fluency_rows if strategy.judge == "pmi-faith" else self.metric(strategy.judge).compute_rows(*columns)
        )
        key, sign = get_spec(strategy.judge).ranking_key
        for i, judged, fluent in zip(scored, judged_rows, fluency_rows):
            values[i] = (faithful_score(judged.get(key), sign), fluent[FLUENCY_VIEWS[strategy.fluency_view]])
        return values


def check_judge(strategy) -> None:
    """A :class:`~faithkit.errors.ConfigError` naming the fix when a rerank strategy's judge is no registered metric."""
    if isinstance(strategy, Rerank):
        try:
            get_spec(strategy.judge)
        except ConfigError as error:
            raise ConfigError(f"rerank: --judge {strategy.judge}: {error}") from None


CANDIDATES_RECORD = Object({"id": ID, "responses": ListOf(TEXT)}, optional={"greedy": TEXT})
"""A candidates file's record (:func:`read_candidates`), as ``faithkit candidates`` writes it."""
CANDIDATES_FIX = 'write one object per line: {"id": "r1", "responses": ["...", "..."], "greedy": "..."}'


def read_candidates(path) -> dict[str, dict]:
    """``{id: record}`` of a candidates file: JSON lines ``{"id": …, "responses": [text, …], "greedy": text}``
    (``greedy`` optional). A malformed line is an :class:`~faithkit.errors.InputError` naming its line and the fix; a
    text that is not valid Unicode (a lone surrogate such as ``\ud800``) makes its record an ``error`` naming the
    field, which becomes that row's error. A UTF-8 BOM at the start is read past, as in rows files."""
    records: dict[str, dict] = {}
    with open(path, encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}, line {number}"
            record = read_json_line(line, Object({}), where, CANDIDATES_FIX)
            if "error" in record and "responses" not in record:
                continue  # a row the engine gave no candidates for (faithkit candidates' error record)
            check_schema(record, CANDIDATES_RECORD, where, CANDIDATES_FIX)
            if str(record["id"]) in records:
                raise InputError(f"{where}: id {record['id']!r} appears twice; give each row's candidates once")
            bad = _field_with_bad_text(record)
            if bad is not None:
                record = {"id": record["id"], "error": f"{where}: field {bad} holds text that is not valid Unicode "
                          f"(a lone surrogate such as \\ud800); fix that text"}  # fmt: skip
            records[str(record["id"])] = record
    return records


def _field_with_bad_text(record: dict) -> str | None:
    """The field of a candidates record (``'responses' item 2``) whose text cannot be written as UTF-8, if any."""
    from ..data.rows import has_bad_text

    if has_bad_text(record.get("greedy", "")):
        return "'greedy'"
    return next((f"'responses' item {i}" for i, text in enumerate(record["responses"], 1) if has_bad_text(text)), None)


def report_missing_ids(candidates: dict[str, dict], ids: list[str], path) -> None:
    """A warning counting (and naming the first few of) the candidates records whose id no row of the input has: they
    are never reranked, which is most often ids from another file."""
    wanted = set(ids)
    unused = [key for key in candidates if key not in wanted]
    if unused:
        shown = ", ".join(repr(key) for key in unused[:3]) + (", …" if len(unused) > 3 else "")
        logger.warning(
            "%s: %d of %d candidates records have an id no row of --input has (%s); they are not reranked",
            path,
            len(unused),
            len(candidates),
            shown,
        )


def generator_judges(model, tokenizer, options, device=None, judge_options=None) -> Judges:
    """The judges of a generator decoding with ``options`` (a GenerationOptions): PMI-FAITH in its prompt layout, any
    other metric with ``judge_options`` (its options by metric name)."""
    return Judges(
        model,
        tokenizer,
        options.template(model, tokenizer),
        batch_size=options.batch_size,
        device=device,
        options=judge_options,
    )


class Generator(NamedTuple):
    """A loaded generator: the model, its tokenizer and its rerank judges."""

    model: Any
    tokenizer: Any
    judges: Judges


class LazyGenerator:
    """The generator ``name`` (a :class:`~faithkit.serving.models.LazyModel`) with :func:`generator_judges` for it, as a
    :class:`Generator` on each call; loaded on the first and kept until :meth:`release`."""

    def __init__(self, name: str, options, device=None, dtype=None, judge_options=None):
        from ..serving.models import LazyModel

        self.model, self.options, self.device = LazyModel(name, device, dtype), options, device
        self.judge_options = judge_options
        self._judges: Judges | None = None

    def __call__(self) -> Generator:
        model, tokenizer = self.model()
        if self._judges is None:
            self._judges = generator_judges(model, tokenizer, self.options, self.device, self.judge_options)
        return Generator(model, tokenizer, self._judges)

    def chat_layout(self) -> bool:
        """Whether the generator decodes (and its PMI-FAITH judge scores) in the chat layout."""
        from ..prompts import CHAT_TEMPLATE

        return self().judges.template == CHAT_TEMPLATE

    def release(self) -> None:
        """Drop the loaded model and its judges (the next call loads them again)."""
        self.model.release()
        self._judges = None


class CandidatesJob:
    """Turns a chunk of rows into rerank records from their candidates; the generator loads on the first chunk.

    A row's greedy response (the fluency reference, and the fallback) is its candidates
    record's ``greedy`` field, else the generator's plain greedy decode with ``options``.
    A row without candidates is that row's error. ``judge_options``: the judge metric's options (not pmi-faith's).
    """

    def __init__(
        self,
        model: str,
        strategy: Rerank,
        options,
        candidates: dict[str, dict],
        device=None,
        dtype=None,
        judge_options: dict | None = None,
    ):
        self.strategy, self.options, self.candidates = strategy, options, candidates
        self.generator = LazyGenerator(model, options, device, dtype, {strategy.judge: judge_options or {}})

    def __call__(self, rows: list[Row]) -> list[dict]:
        from ..decoding import generate

        missing = [row.id for row in rows if row.id not in self.candidates]
        if missing:
            raise ValueError(
                'no candidates for this id in --candidates; add a record {"id": ..., "responses": [...]} for it'
            )
        bad = next((self.candidates[row.id]["error"] for row in rows if "error" in self.candidates[row.id]), None)
        if bad is not None:
            raise ValueError(bad)
        model, tokenizer, judges = self.generator()
        records = [_cleaned(self.candidates[row.id], row, judges.template) for row in rows]
        unknown = [i for i, record in enumerate(records) if "greedy" not in record]
        greedy: list[str] = [record.get("greedy", "") for record in records]  # the unknown ones decoded below
        if unknown:
            plain = dataclasses.replace(self.options, num_beams=1, num_return_sequences=1, do_sample=False)
            decoded = generate(
                model,
                tokenizer,
                [rows[i].document for i in unknown],
                [rows[i].history for i in unknown],
                "plain",
                plain,  # plain greedy
            )
            for i, text in zip(unknown, decoded):
                greedy[i] = text
        choices = rerank(
            self.strategy,
            judges,
            [r.document for r in rows],
            [r.history for r in rows],
            greedy,
            [record["responses"] for record in records],
        )
        return [
            {
                "response": choice.response,
                "candidate": choice.index,
                **why_chosen(
                    choice.scores,
                    choice.fluencies,
                    self.strategy.fluency_tolerance,
                    choice.index,
                    self.strategy.fluency_reference,
                ),
                "greedy": greedy_text,
                "scores": choice.scores,
                "fluencies": choice.fluencies,
                **({"gold": gold} if (gold := reference_of(row)) is not None else {}),
            }
            for choice, greedy_text, row in zip(choices, greedy, rows)
        ]


def _cleaned(record: dict, row: Row, template) -> dict:
    """A candidates record with every response as faithkit cleans a decoded one
    (:func:`~faithkit.decoding.inputs.response_text`: speaker labels, the prompt's last turn repeated, a next turn
    begun), whichever engine wrote it."""
    from ..decoding.inputs import last_turn, response_text

    echoes = (last_turn(row.history),)
    cleaned = {**record, "responses": [response_text(text, template, echoes) for text in record["responses"]]}
    if "greedy" in record:
        cleaned["greedy"] = response_text(record["greedy"], template, echoes)
    return cleaned


def rerank_summary(records: Sequence[dict]) -> list[str]:
    """What ``faithkit rerank`` prints when done, from its output records: the rows, how many kept the greedy
    response, the median score gain of the others over their greedy response, and how often the fluency bound
    left out a higher-scoring candidate."""
    import statistics

    done = [r for r in records if "error" not in r]
    kept = sum(r["candidate"] == 0 for r in done)
    gains = [
        r["scores"][r["candidate"]] - r["scores"][0]
        for r in done
        if r["candidate"] and r["scores"][r["candidate"]] is not None and r["scores"][0] is not None
    ]
    bounded = sum(r.get("excluded_by_bound", 0) > 0 for r in done)
    median = f"{statistics.median(gains):+.3f}" if gains else "none"
    return [
        f"rerank: {len(done)} rows ({len(records) - len(done)} errors): {kept} kept their greedy response, "
        f"{len(done) - kept} took a candidate (median score gain over greedy {median})",
        f"the fluency bound left out a higher-scoring candidate in {bounded} rows "
        "(per row: 'reason', 'fluency_bound'; 'candidate' indexes 'scores', 0 = greedy)",
    ]


OFFLINE_JUDGES = ("faithkit-checker", "faith-judge", "e2e-nli --preset offline")
"""Judges with a model of their own that run without a network (the shipped checker's adapter, faith-judge's offline
LM, e2e-NLI on the offline checker), best first: what the self-judging warning recommends."""


def self_judging(judge: str, generator: str) -> str | None:
    """A warning when rerank's ``judge`` is the generator itself (PMI-FAITH always is; faith-judge when its judge
    LM is the generator), naming the :data:`OFFLINE_JUDGES` that are not; None otherwise."""
    from ..serving import models

    def judge_lm(name: str) -> str | None:
        if name == "pmi-faith":
            return generator
        if name == "faith-judge":
            from ..metrics.registry import faith_judge_lm

            return faith_judge_lm()
        return None

    def is_generator(name: str) -> bool:
        model = judge_lm(name)
        return model is not None and models.resolve(model) == models.resolve(generator)

    if not is_generator(judge):
        return None
    others = [option for option in OFFLINE_JUDGES if option.split()[0] != judge and not is_generator(option.split()[0])]
    return (
        f"rerank: the judge {judge} runs the generator {generator} itself; a model judging its own candidates "
        "favours what it finds likely (its own phrasing) over what the document says, so self-judging is biased. "
        f"Name a judge with a model of its own that runs offline: --judge {' or --judge '.join(others)}"
    )
