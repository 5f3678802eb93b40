"""Run a decoding sweep: generate every cell, judge every response, summarise with intervals, and report.

The output folder ``DIR`` holds::

    cells/<cell>.jsonl    per input row: id, document, history, gold, response (written as produced)
    scores.jsonl          PMI-FAITH under the judge per response (id "<cell>/<row id>"): pmi, tokens, token_pmi, …
    <metric>.jsonl        any other model-backed metric asked for, e.g. q2.jsonl (Q² with its explanations)
    sweep.csv             one row per cell: each measure with its 95% interval and paired p against the baseline
    best.json             the chosen operating point, the rule that chose it, and whether it beats the baseline
    heatmaps/<measure>.png, report.html

The cell and score files are :mod:`faithkit.jobs` outputs: each has its fingerprint beside it
(the generator and judge by :func:`faithkit.models.identity`), so a rerun with other settings
stops saying what changed, and a rerun with the same ones resumes where it stopped:
generation batch by batch and cell by cell, scoring group by group. Batches are the same in
every run (contexts sorted by length, then cut every ``batch_size``), so a resumed sweep
writes the responses an uninterrupted one would. Cells that decode alike
(:func:`~faithkit.decoding.decoded_by`) are generated and scored once and reported under
each name. Under ``accelerate launch`` the processes share the batches and the scoring
groups, and the files end the same as with one process (records in input order).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import Columns, Row, read_results, read_rows, reference_of, unique_ids
from ..data.results import DIGEST_KEY, content_digest
from ..decoding import Cell, decoded_by
from ..errors import InputError
from ..files import write_json
from ..jobs import compute_isolating_failures, current_process, job_fingerprint, shared_outputs
from ..metrics.registry import METRICS, get_spec, metric_fingerprint
from .config import ALWAYS, SweepConfig
from .table import active_measures, best_by_strategy, cell_row, choose_best, statistics, sweep_markdown, write_csv

logger = logging.getLogger(__name__)

SCORE_GROUP = 16
"""Contexts per scorer call: each call holds every cell's responses to its contexts, so the
judge's prefix tree runs each context once for the whole grid and each distinct response once;
the scores file grows group by group, and groups are what processes share under accelerate."""
OUTPUTS = ("cells", "sweep.csv", "best.json", "heatmaps", "report.html")
"""What ``--restart`` deletes, besides the score files of every model-backed metric."""


@dataclass(frozen=True)
class Context:
    """One input row: what the generator answers, and the gold response relevance is measured against."""

    id: str
    document: str
    history: tuple[str, ...]
    gold: str | None


@dataclass
class SweepResult:
    table: list[dict]
    best: dict
    markdown: str
    out: Path


def run_sweep(config: SweepConfig, restart: bool = False) -> SweepResult:
    """Run (or resume) the sweep ``config`` describes; return its table, best cell and markdown tables."""
    config.validate()
    out = Path(config.out)
    contexts = read_contexts(config)
    _prepare(out, restart)
    cells = config.cells()
    runs = list(dict.fromkeys(decoded_by(cell) for cell in cells))
    responses = generate_cells(config, contexts, runs, out)
    responses.update({cell: responses[decoded_by(cell)] for cell in cells})
    golds = [c.gold for c in contexts if c.gold]
    golds = golds if len(golds) == len(contexts) else None  # relevance needs every context's gold

    rows, files = judge(config, out, contexts, runs, responses, golds)

    def measured(cell: Cell) -> dict:
        texts = [responses[cell][c.id] for c in contexts]
        return {
            measure.name: statistics(measure, rows[metric][decoded_by(cell)], texts, golds)
            for metric, measure in active_measures(config)
        }

    baseline = measured(config.baseline)
    parameters = list(dict.fromkeys(key for cell in cells for key in cell.strategy.parameters()))
    table = [cell_row(config, cell, parameters, measured(cell), baseline) for cell in cells]
    rule: dict[str, Any] = {
        "faithfulness": config.faithfulness_measure,
        "relevance": config.relevance,
        "tolerance": config.tolerance,
        "fluency": config.fluency_measure,
        "fluency_tolerance": config.fluency_tolerance,
        "significance": config.significance,
    }
    best = {**choose_best(table, **rule), "by_strategy": best_by_strategy(table, **rule)}
    if current_process().is_main:
        write_csv(table, out / "sweep.csv")
        write_json(out / "best.json", best)

        from .plots import heatmaps
        from .report import write_report

        heatmaps(table, config, out / "heatmaps", best)
        write_report(
            out / "report.html",
            config,
            contexts,
            {cell.label: responses[cell] for cell in cells},
            files.get("pmi-faith"),
            files.get("q2"),
            table,
            best,
        )
    return SweepResult(table, best, sweep_markdown(table, config, best), out)


def judge(
    config: SweepConfig, out: Path, contexts: list[Context], runs: list[Cell], responses: dict, golds: list[str] | None
) -> tuple[dict, dict]:
    """Every metric's result per context for each decode: ``({metric: {cell: [result, …]}}, {metric: records})``.

    Model-backed metrics (the judge, Q²) score into resumable files (:func:`score_responses`);
    the others (lexical, the response form) are computed in memory, in a moment.
    """
    rows: dict[str, dict] = {}
    files: dict[str, dict] = {}  # model-backed metric -> its records by score id
    for name in dict.fromkeys((*config.metrics, *ALWAYS)):
        spec = get_spec(name)
        if spec.runs_on_device:
            if name == "pmi-faith":
                _warn_if_self_judged(config)
            files[name] = score_responses(score_path(out, name), config, spec, contexts, runs, responses)
            rows[name] = {cell: [files[name].get(_score_id(cell, c), {}) for c in contexts] for cell in runs}
        else:
            metric, references = spec.build(), golds if spec.needs_references else None
            rows[name] = {
                cell: metric.compute_rows(
                    [c.document for c in contexts],
                    [c.history for c in contexts],
                    [responses[cell][c.id] for c in contexts],
                    references,
                )
                for cell in runs
            }
    return rows, files


def score_path(out: Path, metric: str) -> Path:
    """Where a model-backed metric's records go: ``scores.jsonl`` for PMI-FAITH, else ``<metric>.jsonl``."""
    return out / ("scores.jsonl" if metric == "pmi-faith" else f"{metric}.jsonl")


def read_contexts(config: SweepConfig) -> list[Context]:
    """The first ``limit`` rows of the input with their gold responses; unusable rows are skipped with a warning."""
    columns = Columns(
        document=config.document_column,
        history=config.history_column,
        id=config.id_column,
        response=config.gold_column,
        required=("document",),
    )
    rows = list(read_rows(config.input_path(), columns, quoting=config.quoting, split=config.split))[: config.limit]
    unique_ids(rows)
    contexts = []
    for row in rows:
        if row.error:
            logger.warning("row %s skipped: %s", row.id, row.error)
            continue
        gold = (row.response or None) if config.gold_column else reference_of(row)  # --gold-column is the response
        contexts.append(Context(row.id, row.document, tuple(row.history), gold))
    if not contexts:
        raise InputError(f"{config.input_path()}: no usable row to generate for (see the warnings above)")
    if "lexical" in config.metrics and not all(c.gold for c in contexts):
        missing = sum(not c.gold for c in contexts)
        logger.warning(
            "%d of %d rows have no gold response (a gold/reference column, else the response column, or "
            "--gold-column): the relevance columns bleu and token_f1 stay empty",
            missing,
            len(contexts),
        )
    return contexts


def _prepare(out: Path, restart: bool) -> None:
    """Make ``out`` the sweep's folder; with ``restart``, delete the sweep's earlier outputs there first."""
    process = current_process()
    if process.is_main:
        if restart:
            scores = [score_path(out, spec.name).name for spec in METRICS.values() if spec.runs_on_device]
            for name in (*OUTPUTS, *scores):
                target = out / name
                shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        out.mkdir(parents=True, exist_ok=True)
    process.wait()


def generate_cells(config: SweepConfig, contexts: list[Context], cells: list[Cell], out: Path) -> dict:
    """Generate every cell's missing responses into ``cells/<cell>.jsonl``; return ``{cell: {row id: response}}``.

    Each batch of contexts is prepared once for all its unfinished cells, whatever their strategy
    and search (:func:`faithkit.decoding.iter_grid`), and a cell's responses are written as soon as it
    finishes the batch. A batch a cell has partly written is regenerated whole for that cell
    (only the missing rows are written), so its batch, and thus its tokens, are the usual ones.
    Under ``accelerate launch`` each process takes every n-th unfinished batch.
    """
    from ..decoding import iter_grid, length_order

    order = length_order([c.document for c in contexts], [c.history for c in contexts])
    batches = [
        [contexts[i] for i in order[start : start + config.generation.batch_size]]
        for start in range(0, len(order), config.generation.batch_size)
    ]
    paths = {cell: out / "cells" / f"{cell.label}.jsonl" for cell in cells}
    process = current_process()
    fingerprint = job_fingerprint("sweep", **config.generation_fingerprint())
    expected = {c.id: content_digest([c.document, list(c.history)]) for c in contexts}
    with shared_outputs(paths, dict.fromkeys(cells, expected), fingerprint=fingerprint, flag="--out") as shared:
        todo = [
            (batch, [cell for cell in cells if not all(c.id in shared.done[cell] for c in batch)]) for batch in batches
        ]
        todo = [(batch, pending) for batch, pending in todo if pending][process.rank :: process.world]
        if todo:
            from ..reranking import load_generator

            logger.info("loading generator %s…", config.generator)
            model, tokenizer, judges = load_generator(config.generator, config.generation, config.device, config.dtype)
        for number, (batch, pending) in enumerate(todo, start=1):
            started = time.monotonic()
            sampled = any(cell.sampled for cell in pending)
            grid = iter_grid(
                model,
                tokenizer,
                [c.document for c in batch],
                [c.history for c in batch],
                pending,
                config.generation,
                seeds=config.generation.row_seeds([c.id for c in batch]) if sampled else None,
                judge=judges,
            )
            seconds = _write_batch(grid, batch, pending, shared, expected)
            logger.info(
                "generate: batch %d/%d (%d contexts x %d cells) in %.0f s (%s)",
                number,
                len(todo),
                len(batch),
                len(pending),
                time.monotonic() - started,
                ", ".join(f"{label} {value:.1f} s" for label, value in seconds.items()),
            )
    wanted = {c.id for c in contexts}
    return {cell: {r["id"]: r["response"] for r in read_results(paths[cell]) if r["id"] in wanted} for cell in cells}


def _write_batch(grid, batch: list[Context], pending: list[Cell], shared, expected: dict) -> dict[str, float]:
    """Write each cell's responses on ``batch`` as ``grid`` yields them (rows already done are kept); return the
    seconds from each cell's previous yield (cells that share a decode: about 0)."""
    seconds = {}
    last = time.monotonic()
    for index, positions, texts in grid:
        cell = pending[index]
        seconds[cell.label], last = time.monotonic() - last, time.monotonic()
        for position, text in zip(positions, texts):
            context = batch[position]
            if context.id not in shared.done[cell]:
                shared.writers[cell].write(
                    {
                        "id": context.id,
                        "document": context.document,
                        "history": list(context.history),
                        "gold": context.gold,
                        "response": text,
                        DIGEST_KEY: expected[context.id],
                    }
                )
    return seconds


def metric_options(config: SweepConfig, spec) -> dict:
    """The constructor options the sweep gives a model-backed metric: the judge, the Q² preset, device and dtype.

    PMI-FAITH skips its two unconditional views (half the work): the sweep reports PMI-FAITH and
    fluency, which need only the document+history and history views."""
    given = {
        "model": config.judge,
        "preset": config.q2_preset,
        "unconditional": False,
        "device": config.device,
        "dtype": config.dtype,
    }
    return {key: value for key, value in given.items() if key in spec.options and value is not None}


def _scoring_fingerprint(config: SweepConfig, spec) -> dict:
    return job_fingerprint(
        "sweep",
        **metric_fingerprint(spec.name, metric_options(config, spec)),
        generation=config.generation_fingerprint(),
    )


def _warn_if_self_judged(config: SweepConfig) -> None:
    from .. import models

    if models.resolve(config.judge) == models.resolve(config.generator):
        logger.warning(
            "the judge %s is also the generator: PMI-DECODE chose its tokens to raise this model's own "
            "PMI, so PMI-FAITH under it favours the PMI-DECODE cells by construction; judge with another "
            "model (--judge) for a fair comparison",
            config.judge,
        )


def _score_id(cell: Cell, context: Context) -> str:
    return f"{cell.label}/{context.id}"


def score_responses(
    path: Path, config: SweepConfig, spec, contexts: list[Context], cells: list[Cell], responses: dict
) -> dict[str, dict]:
    """Score every cell's responses with ``spec``'s metric into ``path`` (resuming it); return every record by id
    ``<cell>/<row id>``.

    Contexts go in fixed groups of :data:`SCORE_GROUP`, and one ``compute_rows`` call covers all
    cells' responses to a group, each distinct response once. A group with any record missing
    is scored whole again (only the missing records are written), so every score comes from
    the same call as in an uninterrupted run, to the last bit, however many processes share
    the groups under ``accelerate launch``. Empty responses get a record without a score.
    Failures follow :func:`faithkit.jobs.compute_isolating_failures`: one bad response (too long
    for the judge) gets an ``error``, a setting no response can meet stops the sweep.
    """
    process = current_process()
    expected = {
        _score_id(cell, c): content_digest([c.document, list(c.history), responses[cell][c.id]])
        for c in contexts
        for cell in cells
    }
    with shared_outputs(
        {path: path}, {path: expected}, fingerprint=_scoring_fingerprint(config, spec), flag="--out"
    ) as shared:
        done, writer = shared.done[path], shared.writers[path]
        groups = [contexts[start : start + SCORE_GROUP] for start in range(0, len(contexts), SCORE_GROUP)]
        groups = [group for group in groups if not all(_score_id(cell, c) in done for c in group for cell in cells)][
            process.rank :: process.world
        ]
        if groups:
            logger.info("loading %s for %s…", _models_of(config, spec), spec.name)
        metric = spec.build(**metric_options(config, spec)) if groups else None
        for group in groups:
            started = time.monotonic()
            entries = [(cell, c) for c in group for cell in cells]
            unique = list(
                dict.fromkeys((c, responses[cell][c.id]) for cell, c in entries if responses[cell][c.id].strip())
            )
            results = {(c.id, text): result for (c, text), result in zip(unique, _compute(metric, unique))}
            for cell, context in entries:
                if _score_id(cell, context) in done:
                    continue
                text = responses[cell][context.id]
                writer.write(
                    {
                        "id": _score_id(cell, context),
                        "cell": cell.label,
                        "row": context.id,
                        "document": context.document,
                        "history": list(context.history),
                        "response": text,
                        DIGEST_KEY: expected[_score_id(cell, context)],
                        **results.get((context.id, text), {}),
                    }
                )
            logger.info(
                "%s: %d responses (%d distinct) in %.0f s",
                spec.name,
                len(entries),
                len(unique),
                time.monotonic() - started,
            )
    return {record["id"]: record for record in read_results(path)}


def _models_of(config: SweepConfig, spec) -> str:
    """What a model-backed metric loads, as the progress line names it: ``judge gemma3-270m``, ``the offline Q²
    models``."""
    if "model" in spec.options:
        return f"judge {config.judge}"
    return f"the {config.q2_preset or 'hub'} {spec.name} models"


def _compute(metric, items: list[tuple[Context, str]]) -> list[dict]:
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
