"""Judging a sweep: each scorer in one pass over every response it must score, rerank candidates included.

A *pass* is one scorer (a model-backed metric under one model and prompt layout) over the
responses it scores, :data:`SCORE_GROUP` contexts per ``compute_rows`` call, into a resumable
file. The sweep's measures need a pass per model-backed metric over every cell's response; a
rerank cell's choice needs its candidates judged by its judge, with their fluency under the
generator (:class:`faithkit.generation.rerank.Judges`). A rerank scorer that is one of the sweep's
(same metric, model and layout, by :func:`~faithkit.metrics.registry.metric_fingerprint`)
scores the candidates in that pass, so each context runs through the scoring model once for the grid's
responses and the candidates; any other gets a pass of its own under the generator
(``candidates/<metric>.jsonl``). The passes that score candidates run first, then each rerank
cell chooses by the strategy's rule (:func:`faithkit.decoding.rerank.choose`), then the passes
that score responses only, the chosen ones among them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..data import Row, read_results
from ..data.results import DIGEST_KEY, content_digest
from ..decoding import Cell
from ..decoding.rerank import FLUENCY_VIEWS, Rerank, choose, faithful_score
from ..data.files import replacing, to_json
from ..data.jobs import compute_isolating_failures, current_process, job_fingerprint, shared_outputs
from ..metrics.registry import get_spec, metric_fingerprint
from .config import ALWAYS, SweepConfig

logger = logging.getLogger(__name__)

SCORE_GROUP = 16
"""Contexts per scorer call: each call holds every response a pass scores for its contexts, so the
judge's prefix tree runs each context once for the whole grid and each distinct response once;
a pass's file grows group by group, and groups are what processes share under accelerate."""
READ_FROM = {"pmi-faith": "faith-judge"}
"""Metrics whose rows another's carry under the same judge LM: faith-judge's rows hold PMI-FAITH's, so a sweep that
measures both runs the LM once and writes ``scores.jsonl`` from faith-judge's records."""


@dataclass(eq=False)
class Pass:
    """One scorer and what it scores: ``texts[context id][score id]`` is a response to score."""

    path: Path
    fingerprint: dict
    build: Callable[[], Any]
    models: str  # for the progress line: "scoring model gemma3-270m", "the generator"
    metric: str
    texts: dict[str, dict[str, str]] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)
    source: Pass | None = None  # the pass whose records this one's are read from (:data:`READ_FROM`)

    def add(self, context_id: str, score_id: str, text: str) -> None:
        self.texts.setdefault(context_id, {})[score_id] = text


def score_responses(
    config: SweepConfig,
    out: Path,
    contexts: list,
    responses: dict,
    candidates: dict,
    reranked: list[Cell],
    generator,
) -> tuple[dict, dict]:
    """Every metric's result per context for each decode, ``({metric: {cell: [result, …]}}, {metric: records})``;
    ``responses`` (``{cell: {row id: response}}``) gains the ``reranked`` cells' chosen responses, made from
    ``candidates`` (``{candidate_pool(cell): {row id: [greedy, *candidates]}}``). Rerank judges score the candidates
    first (those that need the generator while it is loaded), then every metric scores the chosen responses.

    ``generator``: a :class:`faithkit.generation.rerank.LazyGenerator`, for the rerank judges that are no sweep scorer.
    Metrics that are not model-backed (lexical, the response form) are computed in memory, in a moment.
    """
    names = list(dict.fromkeys((*config.metrics, *ALWAYS)))
    sweep_passes = {name: _sweep_pass(config, out, name) for name in names if get_spec(name).runs_on_device}
    if "pmi-faith" in sweep_passes:
        _warn_if_self_judged(config)
    for name, source in READ_FROM.items():
        if name in sweep_passes and source in sweep_passes:
            _read_from(sweep_passes[name], sweep_passes[source])
    passes = {json.dumps(p.fingerprint, sort_keys=True): p for p in sweep_passes.values()}
    by_judge = {metric: _rerank_scorers(config, out, metric, generator, passes) for metric in _rerank_judges(reranked)}
    needs = {cell: by_judge[_rerank(cell).judge] for cell in reranked}
    decodes = list(responses)
    _add_responses(sweep_passes.values(), responses, contexts)
    _add_candidates(needs, candidates, contexts)
    first = _with_sources([p for cell in reranked for p in needs[cell]], sweep_passes)  # they score the candidates
    own = [p for p in first if p not in sweep_passes.values()]
    for p in own:  # under the generator, released before the judge loads
        run_pass(p, contexts)
    generator.release()
    for p in first:
        if p not in own:
            run_pass(p, contexts)
    chosen = {cell: _chosen(cell, contexts, candidates[candidate_pool(cell)], needs[cell]) for cell in reranked}
    for cell in reranked:
        responses[cell] = {c.id: candidates[candidate_pool(cell)][c.id][chosen[cell][c.id]] for c in contexts}
        _write_chosen(out, cell, contexts, responses[cell], chosen[cell])
    later = _with_sources([p for p in sweep_passes.values() if p not in first], sweep_passes)  # and the chosen ones
    _add_responses(later, {cell: responses[cell] for cell in reranked}, contexts)
    for p in later:
        run_pass(p, contexts)
    return _results(names, contexts, [*decodes, *reranked], responses, sweep_passes, chosen, golds_of(contexts))


def golds_of(contexts: list) -> list[str] | None:
    """The contexts' gold responses, or None unless every context has one (relevance needs them all)."""
    golds = [c.gold for c in contexts if c.gold]
    return golds if len(golds) == len(contexts) else None


def _add_candidates(needs: dict, candidates: dict, contexts: list) -> None:
    """Give each rerank cell's passes (``needs``: ``{cell: [pass, …]}``) every context's candidates to score."""
    for cell, passes in needs.items():
        for p in passes:
            for c in contexts:
                for k, text in enumerate(candidates[candidate_pool(cell)][c.id]):
                    p.add(c.id, _candidate_id(cell, k, c), text)


def _read_from(p: Pass, source: Pass) -> None:
    """Make ``p`` read its records off ``source``'s: the same responses, scored once, by ``source``."""
    from ..metrics.faith_judge import PMIFaithOffJudge

    p.source, p.texts = source, source.texts  # one dict: whatever either scores, both do
    p.build, p.models = lambda: PMIFaithOffJudge(source.records.values()), f"{source.metric}'s records"


def _with_sources(passes: list[Pass], sweep_passes: dict) -> list[Pass]:
    """``passes`` without repeats and with the passes they read from, or that read from them, sources first."""
    chosen = {id(p): p for p in passes}
    for p in sweep_passes.values():
        if p.source is not None and (id(p) in chosen or id(p.source) in chosen):
            chosen[id(p)] = p
            chosen[id(p.source)] = p.source
    return sorted(chosen.values(), key=lambda p: p.source is not None)


def _add_responses(passes, responses: dict, contexts: list) -> None:
    for p in passes:
        for cell, texts in responses.items():
            for c in contexts:
                p.add(c.id, _score_id(cell, c), texts[c.id])


def _results(names, contexts, cells, responses, sweep_passes, chosen, golds) -> tuple[dict, dict]:
    """``(rows, files)`` of :func:`score_responses`: each metric's records per cell, rerank cells' from their chosen candidate."""
    rows: dict[str, dict] = {}
    files: dict[str, dict] = {}
    for name in names:
        spec = get_spec(name)
        if name in sweep_passes:
            records = files[name] = dict(sweep_passes[name].records)
            for cell in chosen:
                for c in contexts:
                    key = _candidate_id(cell, chosen[cell][c.id], c)
                    if key in records:  # the pass scored the candidates: the chosen one's record is the cell's
                        records[_score_id(cell, c)] = {**records[key], "id": _score_id(cell, c), "cell": cell.label}
            rows[name] = {cell: [records.get(_score_id(cell, c), {}) for c in contexts] for cell in cells}
        else:
            metric, references = spec.build(), golds if spec.needs_references else None
            rows[name] = {
                cell: metric.compute_rows(
                    [c.document for c in contexts],
                    [c.history for c in contexts],
                    [responses[cell][c.id] for c in contexts],
                    references,
                )
                for cell in cells
            }
    return rows, files


def _rerank(cell: Cell) -> Rerank:
    return cast(Rerank, cell.strategy)


def candidate_pool(cell: Cell) -> Cell:
    """The cell under which a rerank cell's candidates are drawn and kept: the same for rerank cells that draw the
    same ones (not :func:`~faithkit.decoding.shared_decode`, the cell whose decode a cell repeats)."""
    return Cell(
        Rerank(n=_rerank(cell).n, candidate_search=_rerank(cell).candidate_search, also=_rerank(cell).also), "greedy"
    )


def candidates_label(cell: Cell) -> str:
    """``rerank_n8_beam`` (``+beam+pmi_a0.25_p0.6`` with ``also`` decodes): the name of a rerank cell's candidates, the
    same for the cells that draw the same ones."""
    pool = _rerank(candidate_pool(cell))
    return f"rerank_n{pool.n}_{pool.candidate_search}" + pool.label.partition(f"_f{pool.fluency_tolerance:g}")[2]


def candidates_path(out: Path, cell: Cell) -> Path:
    """Where a rerank cell's candidates go, ``{"id", "greedy", "responses"}`` per row: ``faithkit rerank``'s input form."""
    return out / "candidates" / f"{candidates_label(cell)}.jsonl"


def _sweep_pass(config: SweepConfig, out: Path, name: str) -> Pass:
    spec = get_spec(name)
    options = metric_options(config, spec)
    if "server" in spec.options:
        models = f"the model served at {config.server}"
    elif "model" in spec.options:
        models = f"scoring model {config.scoring_model}"
    else:
        models = f"the {config.q2_preset or 'hub'} {name} models"
    return Pass(
        score_path(out, name),
        job_fingerprint("sweep", **metric_fingerprint(name, options), generation=config.generation_fingerprint()),
        lambda: spec.build(**options),
        models,
        name,
    )


def _rerank_judges(reranked: list[Cell]) -> list[str]:
    """The metrics that judge the rerank cells' candidates, each once."""
    return list(dict.fromkeys(_rerank(cell).judge for cell in reranked))


def _rerank_scorers(config: SweepConfig, out: Path, metric: str, generator, passes: dict) -> tuple[Pass, Pass]:
    """``(judge pass, fluency pass)`` of the rerank cells judged by the metric ``metric``, each the sweep's own pass when it is
    the same scorer; new passes join ``passes``. The fluency is PMI-FAITH's under the generator in its decoding
    layout, as the strategy's."""
    found = []
    for name in (metric, "pmi-faith"):
        options = _rerank_options(config, name, generator)
        fingerprint = job_fingerprint(
            "sweep", **metric_fingerprint(name, options), generation=config.generation_fingerprint()
        )
        key = json.dumps(fingerprint, sort_keys=True)
        if key not in passes:

            def build(name: str = name):
                return generator().judges.metric(name)

            passes[key] = Pass(
                out / "candidates" / f"{name}.jsonl",
                fingerprint,
                build,
                "the generator" if name == "pmi-faith" else f"the {name} judge",
                name,
            )
        found.append(passes[key])
    return found[0], found[1]


def _rerank_options(config: SweepConfig, name: str, generator) -> dict:
    """The options that identify a rerank judge: PMI-FAITH under the generator in its layout, any other metric at its
    defaults (as :class:`faithkit.generation.rerank.Judges` builds them)."""
    if name != "pmi-faith":
        return {}
    layout = {"template": "chat"} if generator.chat_layout() else {}
    given = {"model": config.generator, "unconditional": False, "dtype": config.dtype, **layout}
    return {key: value for key, value in given.items() if value is not None}


def _chosen(cell: Cell, contexts: list, candidates: dict, needs: tuple[Pass, Pass]) -> dict[str, int]:
    """Each context's index among ``[greedy, *candidates]`` by the rerank rule, from the judge and fluency passes."""
    judged, fluent = needs
    strategy = _rerank(cell)
    key, sign = get_spec(strategy.judge).ranking_key
    chosen = {}
    for c in contexts:
        ids = [_candidate_id(cell, k, c) for k in range(len(candidates[c.id]))]
        scores = [faithful_score(judged.records.get(i, {}).get(key), sign) for i in ids]
        fluencies = [fluent.records.get(i, {}).get(FLUENCY_VIEWS[strategy.fluency_view]) for i in ids]
        chosen[c.id] = choose(scores, fluencies, strategy.fluency_tolerance, strategy.fluency_reference)
    return chosen


def _write_chosen(out: Path, cell: Cell, contexts: list, responses: dict, chosen: dict) -> None:
    """``cells/<rerank cell>.jsonl`` as the other cells' files, with ``candidate``: the index among
    ``[greedy, *candidates]`` (0: the greedy response), as ``faithkit rerank`` writes it. Made again from the passes on every run, so written whole."""
    if not current_process().is_main:
        return
    (out / "cells").mkdir(exist_ok=True)
    with replacing(out / "cells" / f"{cell.label}.jsonl") as handle:
        for c in contexts:
            record = {
                "id": c.id,
                "document": c.document,
                "history": list(c.history),
                "gold": c.gold,
                "response": responses[c.id],
                "candidate": chosen[c.id],
                DIGEST_KEY: content_digest([c.document, list(c.history)]),
            }
            handle.write(to_json(record) + "\n")


def score_path(out: Path, metric: str) -> Path:
    """Where a model-backed metric's records go: ``scores.jsonl`` for PMI-FAITH, else ``<metric>.jsonl``."""
    return out / ("scores.jsonl" if metric == "pmi-faith" else f"{metric}.jsonl")


def metric_options(config: SweepConfig, spec) -> dict:
    """The constructor options the sweep gives a model-backed metric: the scoring model, the Q² preset, the served model
    (llm-judge; its API key from ``$OPENAI_API_KEY``, never a setting), device and dtype.

    PMI-FAITH skips its two unconditional views (half the work): the sweep reports PMI-FAITH and
    fluency, which need only the document+history and history views."""
    given = {
        "model": config.scoring_model,
        "preset": config.q2_preset,
        "server": config.server,
        "served_model": config.served_model,
        "unconditional": False,
        "device": config.device,
        "dtype": config.dtype,
    }
    return {key: value for key, value in given.items() if key in spec.options and value is not None}


def served_judges(config: SweepConfig) -> dict:
    """The served model ``llm-judge`` asks, by role, when the sweep measures it: the server is asked which model it
    serves, so a missing ``server`` or a server that is down is one error line (the command asks before it decodes).
    The API key comes from ``$OPENAI_API_KEY`` only, so no setting or output holds it."""
    if "llm-judge" not in config.metrics:
        return {}
    from ..metrics.llm_judge import served_engine

    engine = served_engine(config.server, config.served_model, None)
    return {"llm-judge --server": {"served_model": engine.model, "server": config.server}}


def _warn_if_self_judged(config: SweepConfig) -> None:
    from ..serving import models

    if models.resolve(config.scoring_model) == models.resolve(config.generator):
        logger.warning(
            "the scoring model %s is also the generator: PMI-DECODE chose its tokens to raise this model's own "
            "PMI, so PMI-FAITH under it favours the PMI-DECODE cells by construction; score with another "
            "model (--scoring-model) for a fair comparison",
            config.scoring_model,
        )


def _score_id(cell: Cell, context) -> str:
    return f"{cell.label}/{context.id}"


def _candidate_id(cell: Cell, k: int, context) -> str:
    """Candidate ``k`` of a context (0: the greedy response), shared by the rerank cells that draw the same ones."""
    return f"{candidates_label(cell)}#{k}/{context.id}"


def run_pass(p: Pass, contexts: list) -> None:
    """Score what ``p`` holds into its file (resuming it) and keep every record by score id in ``p.records``.

    Contexts go in fixed groups of :data:`SCORE_GROUP`, and one ``compute_rows`` call covers all
    a group's responses, each distinct response once. A group with any record missing is scored
    whole again (only the missing records are written), so every score comes from the same call
    as in an uninterrupted run, to the last bit, however many processes share the groups under
    ``accelerate launch``. Empty responses get a record without a score. Failures follow
    :func:`faithkit.data.jobs.compute_isolating_failures`: one bad response (too long for the judge)
    gets an ``error``, a setting no response can meet stops the sweep.
    """
    process = current_process()
    expected = {
        score_id: content_digest([c.document, list(c.history), text])
        for c in contexts
        for score_id, text in p.texts.get(c.id, {}).items()
    }
    with shared_outputs({p.path: p.path}, {p.path: expected}, fingerprint=p.fingerprint, flag="--out") as shared:
        done, writer = shared.done[p.path], shared.writers[p.path]
        groups = [contexts[start : start + SCORE_GROUP] for start in range(0, len(contexts), SCORE_GROUP)]
        groups = [g for g in groups if not all(i in done for c in g for i in p.texts.get(c.id, {}))]
        groups = groups[process.rank :: process.world]
        if groups:
            logger.info("loading %s for %s…", p.models, p.metric)
        metric = p.build() if groups else None
        for group in groups:
            _score_group(p, metric, group, writer, done, expected)
    p.records = {record["id"]: record for record in read_results(p.path)}


def _score_group(p: Pass, metric, group: list, writer, done, expected: dict) -> None:
    """One ``compute_rows`` call over a group's distinct responses; the records not yet ``done`` written."""
    started = time.monotonic()
    entries = [(score_id, c, text) for c in group for score_id, text in p.texts.get(c.id, {}).items()]
    unique = list(dict.fromkeys((c.id, text) for _, c, text in entries if text.strip()))
    by_id = {c.id: c for c in group}
    results = dict(zip(unique, _compute(metric, [(by_id[i], text) for i, text in unique])))
    for score_id, context, text in entries:
        if score_id in done:
            continue
        writer.write(
            {
                "id": score_id,
                "cell": score_id.split("/")[0],
                "row": context.id,
                "document": context.document,
                "history": list(context.history),
                "response": text,
                DIGEST_KEY: expected[score_id],
                **results.get((context.id, text), {}),
            }
        )
    logger.info(
        "%s: %d responses (%d distinct) in %.0f s", p.metric, len(entries), len(unique), time.monotonic() - started
    )


def _compute(metric, items: list) -> list[dict]:
    """``metric.compute_rows`` over all items at once, under the jobs' failure policy (an ``error`` for a bad item)."""
    rows = [
        Row(id=str(i), document=c.document, history=list(c.history), response=text) for i, (c, text) in enumerate(items)
    ]

    def compute(chunk: list[Row]) -> list[dict]:
        return metric.compute_rows([r.document for r in chunk], [r.history for r in chunk], [r.response for r in chunk])

    return [
        {"error": str(result)} if isinstance(result, Exception) else result
        for result in (compute_isolating_failures(compute, rows) if rows else [])
    ]
