"""Run a decoding sweep: generate every cell, judge every response, summarise with intervals, and report.

The output folder ``DIR`` holds:

    cells/<cell>.jsonl    per input row: id, document, history, gold, response (written as produced)
    candidates/           a rerank cell's candidates (greedy, responses: faithkit rerank's input form) and, when
                          its judge is no scorer of the sweep, their scores under that judge (sweep/judging.py)
    scores.jsonl          PMI-FAITH under the scoring model per response (id "<cell>/<row id>"): pmi, tokens, token_pmi, …
                          (read off faith-judge.jsonl's rows when both are measured: one scoring-model pass)
    <metric>.jsonl        any other model-backed metric asked for, e.g. q2.jsonl (Q² with its explanations)
    sweep.csv             one row per cell: each measure with its 95% interval and paired p against the baseline
    sweep.csv.provenance.json   what made the sweep (:mod:`faithkit.provenance`), which best.json, report.html and
                          the printed table carry too
    best.json             the chosen operating point, the rule that chose it, and whether it beats the baseline
    heatmaps/<measure>.png, report.html

The cell and score files are :mod:`faithkit.data.jobs` outputs: each has its fingerprint beside it
(the generator and scoring model by :func:`faithkit.serving.models.identity`), so a rerun with other settings
stops saying what changed, and a rerun with the same ones resumes where it stopped:
generation batch by batch and cell by cell, scoring group by group. Batches are the same in
every run (contexts sorted by length, then cut every ``batch_size``), so a resumed sweep
writes the responses an uninterrupted one would. Cells that decode alike
(:func:`~faithkit.decoding.shared_decode`) are generated and scored once and reported under
each name. Under ``accelerate launch`` the processes share the batches and the scoring
groups, and the files end the same as with one process (records in input order).
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import provenance
from ..data import Columns, read_results, read_rows, reference_of, unique_ids
from ..data.results import DIGEST_KEY, content_digest
from ..decoding import Cell, shared_decode
from ..decoding.rerank import Rerank
from ..errors import InputError
from ..data.files import write_json
from ..data.jobs import JobInterrupted, current_process, job_fingerprint, shared_outputs
from ..metrics.registry import METRICS
from ..generation.rerank import LazyGenerator
from .config import SweepConfig
from .judging import (
    candidate_pool,
    candidates_path,
    golds_of,
    metric_options,
    score_path,
    score_responses,
    served_judges,
)
from .table import active_measures, best_by_strategy, cell_row, choose_best, statistics, sweep_markdown, write_csv

logger = logging.getLogger(__name__)

OUTPUTS = ("cells", "candidates", "sweep.csv", "sweep.csv.provenance.json", "best.json", "heatmaps", "report.html")
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
    runs = list(dict.fromkeys(shared_decode(cell) for cell in cells))
    reranked = [cell for cell in runs if isinstance(cell.strategy, Rerank)]
    decodes = [cell for cell in runs if cell not in reranked]
    generator = LazyGenerator(config.generator, config.generation, config.device, config.dtype)
    pools = list(dict.fromkeys(candidate_pool(cell) for cell in reranked))
    if current_process().is_main:
        logger.info("%s", plan(config, cells, [*decodes, *pools], runs, len(contexts)))
    try:
        responses = generate_cells(config, contexts, [*decodes, *pools], out, generator)
        candidates = {cell: responses.pop(cell) for cell in pools}
        rows, files = score_responses(config, out, contexts, responses, candidates, reranked, generator)
    except KeyboardInterrupt:
        raise JobInterrupted(f"interrupted: {saved(out, len([*decodes, *pools]) * len(contexts))}") from None
    responses.update({cell: responses[shared_decode(cell)] for cell in cells})
    golds = golds_of(contexts)

    def measured(cell: Cell) -> dict:
        texts = [responses[cell][c.id] for c in contexts]
        return {
            measure.name: statistics(measure, rows[metric][shared_decode(cell)], texts, golds)
            for metric, measure in active_measures(config)
        }

    baseline = measured(config.baseline)
    parameters = list(dict.fromkeys(key for cell in cells for key in cell.strategy.parameters()))
    table = [cell_row(config, cell, parameters, measured(cell), baseline) for cell in cells]
    rule = config.choice_rule()
    best = {
        **choose_best(table, **rule),
        "faithfulness_note": config.faithfulness_note,
        "by_strategy": best_by_strategy(table, **rule),
    }
    made_by = sweep_provenance(config)
    if current_process().is_main:
        responses_by_label = {cell.label: responses[cell] for cell in cells}
        _write_outputs(config, contexts, responses_by_label, files, table, best, made_by)
    markdown = "\n".join([*provenance.header_lines(made_by), "", sweep_markdown(table, config, best)])
    return SweepResult(table, {**best, provenance.KEY: made_by}, markdown, out)


def plan(config: SweepConfig, cells: list[Cell], decodes: list[Cell], runs: list[Cell], contexts: int) -> str:
    """What the sweep is about to do, said before it starts: its cells, the decodes they need, the judging."""
    judged = [spec.name for spec in METRICS.values() if spec.runs_on_device and spec.name in config.metrics]
    return (
        f"plan: {len(cells)} cells ({len(runs)} distinct decodes) on {contexts} contexts: "
        f"{len(decodes) * contexts:,} generations ({len(decodes)} decodes x {contexts}), then "
        f"{len(runs) * contexts:,} responses judged by {', '.join(judged) or 'the model-free measures'} "
        f"({len(runs) * contexts * len(judged):,} scorings) -> {config.out}"
    )


def saved(out: Path, generations: int) -> str:
    """How much of an interrupted sweep is on disk: the responses of ``generations`` and the scores."""

    def lines(path: Path) -> int:
        with open(path, "rb") as handle:
            return sum(1 for _ in handle)

    responses = sum(lines(path) for folder in ("cells", "candidates") for path in (out / folder).glob("*.jsonl"))
    scored = sum(lines(path) for path in out.glob("*.jsonl"))
    return (
        f"{responses:,} of {generations:,} generations and {scored:,} scores are saved in {out}; "
        f"rerun the same command to continue"
    )


def sweep_provenance(config: SweepConfig) -> dict:
    """What made the sweep: its generator, its scoring model, every other model a metric reads (a claim checker's, Q²'s
    stages, adapters with their base) and any served judge, its input, every setting (file or flag) off its default
    and each metric's options."""
    from ..metrics.model_roles import models_read
    from ..metrics.registry import option_defaults

    options = {name: metric_options(config, METRICS[name]) for name in config.metrics}
    read = {
        role: model
        for name in config.metrics
        for role, model in models_read(name, options[name]).items()
        if model != config.scoring_model  # the scoring model's own role names it
    }
    return provenance.record(
        {"generator": config.generator, "scoring_model": config.scoring_model, **read, **served_judges(config)},
        config.input_path(),
        provenance.changed_fields(config),
        {name: {**option_defaults(name), **options[name]} for name in config.metrics},
    )


def _write_outputs(
    config: SweepConfig, contexts: list, responses: dict, files: dict, table: list, best: dict, made_by: dict
) -> None:
    """sweep.csv (what made it beside it), best.json, the heatmaps and report.html."""
    from .plots import heatmaps
    from ..metrics.claim_checkers import PRESETS as CLAIM_CHECKERS
    from .report import SweepOutcome, write_report

    out = Path(config.out)
    write_csv(table, out / "sweep.csv")
    provenance.write_sidecar(out / "sweep.csv", made_by)
    write_json(out / "best.json", {**best, provenance.KEY: made_by})
    heatmaps(table, config, out / "heatmaps", best)
    checker = next((files[name] for name in config.metrics if name in CLAIM_CHECKERS and name in files), None)
    outcome = SweepOutcome(contexts, responses, files.get("pmi-faith"), files.get("q2"), table, best, checker)
    write_report(out / "report.html", config, outcome, made_by)


def read_contexts(config: SweepConfig) -> list[Context]:
    """The first ``limit`` rows of the input with their gold responses; unusable rows are skipped with a warning."""
    columns = Columns(
        document=config.document_column,
        history=config.history_column,
        id=config.id_column,
        response=config.gold_column,
        required=("document",),
        naming="Name it with --{field}-column (the config key {field}_column).",
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


def generate_cells(config: SweepConfig, contexts: list[Context], cells: list[Cell], out: Path, generator) -> dict:
    """Generate every cell's missing responses into ``cells/<cell>.jsonl``, a rerank cell's candidates into
    :func:`~faithkit.sweep.judging.candidates_path`; return ``{cell: {row id: response, or [greedy, *candidates]}}``.

    Each batch of contexts is prepared once for all its unfinished cells, whatever their strategy
    and search (:func:`faithkit.decoding.iter_grid`), and a cell's responses are written as soon as it
    finishes the batch. A batch a cell has partly written is regenerated whole for that cell
    (only the missing rows are written), so its batch, and thus its tokens, are the usual ones.
    Under ``accelerate launch`` each process takes every n-th unfinished batch.
    """
    from ..decoding import length_order

    order = length_order([c.document for c in contexts], [c.history for c in contexts])
    batches = [
        [contexts[i] for i in order[start : start + config.generation.batch_size]]
        for start in range(0, len(order), config.generation.batch_size)
    ]
    paths = {
        cell: candidates_path(out, cell) if isinstance(cell.strategy, Rerank) else out / "cells" / f"{cell.label}.jsonl"
        for cell in cells
    }
    process = current_process()
    fingerprint = job_fingerprint("sweep", **config.generation_fingerprint())
    expected = {c.id: content_digest([c.document, list(c.history)]) for c in contexts}
    with shared_outputs(paths, dict.fromkeys(cells, expected), fingerprint=fingerprint, flag="--out") as shared:
        todo = [
            (batch, [cell for cell in cells if not all(c.id in shared.done[cell] for c in batch)]) for batch in batches
        ]
        todo = [(batch, pending) for batch, pending in todo if pending][process.rank :: process.world]
        if todo:
            logger.info("loading generator %s…", config.generator)
            model, tokenizer, _ = generator()
        for number, (batch, pending) in enumerate(todo, start=1):
            seconds = _generate_batch(config, (model, tokenizer), batch, pending, (shared, expected, paths))
            logger.info(
                "generate: batch %d/%d (%d contexts x %d cells) in %.0f s (prompts and writing %.1f s, %s)",
                number,
                len(todo),
                len(batch),
                len(pending),
                seconds.pop("total"),
                seconds.pop("other"),
                ", ".join(f"{paths[pending[index]].stem} {value:.1f} s" for index, value in seconds.items()),
            )
    wanted = {c.id for c in contexts}
    return {cell: {r["id"]: _decoded(r) for r in read_results(paths[cell]) if r["id"] in wanted} for cell in cells}


def _generate_batch(config: SweepConfig, loaded: tuple, batch: list, pending: list[Cell], outputs: tuple) -> dict:
    """Decode one batch of contexts for its pending cells and write them (``outputs``: what :func:`_write_batch`
    writes to); the seconds each cell took by its index in ``pending``, the ``total`` and the ``other``."""
    from ..decoding import iter_grid
    from ..decoding.inputs import context_cuts

    model, tokenizer = loaded
    started = time.monotonic()
    sampled = any(cell.sampled for cell in pending)
    seconds: dict = {}
    documents, histories = [c.document for c in batch], [c.history for c in batch]
    grid = iter_grid(
        model,
        tokenizer,
        documents,
        histories,
        pending,
        config.generation,
        seeds=config.generation.row_seeds([c.id for c in batch]) if sampled else None,
        seconds=seconds,
    )  # no judge: rerank cells give their candidates, judged in the judge passes
    cuts = context_cuts(model, tokenizer, documents, histories, options=config.generation)
    _write_batch(grid, batch, pending, cuts, *outputs)
    total = time.monotonic() - started
    return {**seconds, "total": total, "other": total - sum(seconds.values())}


def _decoded(record: dict) -> str | list[str]:
    """A cell record's response, or a candidates record's ``[greedy, *responses]``."""
    return [record["greedy"], *record["responses"]] if "responses" in record else record["response"]


def _write_batch(
    grid, batch: list[Context], pending: list[Cell], cuts: list[dict], shared, expected: dict, paths: dict
) -> None:
    """Write each cell's responses on ``batch`` as ``grid`` yields them (rows already done are kept) into its file of
    ``paths``, each with what was cut of its context to fit the model (``cuts``, by position, as ``faithkit
    generate`` reports it)."""
    for index, positions, texts in grid:
        cell = pending[index]
        for position, text in zip(positions, texts):
            context = batch[position]
            if context.id not in shared.done[cell]:
                decoded = {"greedy": text[0], "responses": text[1:]} if isinstance(text, list) else {"response": text}
                shared.writers[cell].write(
                    {
                        "id": context.id,
                        "document": context.document,
                        "history": list(context.history),
                        "gold": context.gold,
                        **decoded,
                        **cuts[position],
                        DIGEST_KEY: expected[context.id],
                    }
                )
