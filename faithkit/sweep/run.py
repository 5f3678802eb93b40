"""Run a PMI-DECODE sweep: generate every cell, judge every response, summarise and report.

The output folder ``DIR`` holds::

    sweep.json            what the responses and scores depend on (a rerun with other settings stops)
    cells/<cell>.jsonl    per input row: id, document, history, gold, response (written as produced)
    scores.jsonl          PMI-FAITH under the judge per response (id "<cell>/<row id>"): pmi, tokens, token_pmi, …
    q2.jsonl              Q² per response with its explanations (when asked)
    sweep.csv             one row of measures per cell
    best.json             the chosen operating point and the rule that chose it
    heatmaps/<measure>.png, report.html

Every file is appended to as work finishes, so an interrupted sweep resumes where it
stopped: generation batch by batch and cell by cell, scoring group by group. Batches are
the same in every run (contexts sorted by length, then cut every ``batch_size``), so a
resumed sweep writes the responses an uninterrupted one would. Under ``accelerate launch``
the processes share the batches and the scoring groups, and the files end the same as with
one process (records in input order).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..data import Columns, read_results, read_rows, unique_ids
from ..errors import InputError, OutputError
from ..jobs import current_process, shared_outputs
from .config import Cell, SweepConfig
from .table import cell_row, choose_best, markdown_table, write_csv

logger = logging.getLogger(__name__)

GOLD_COLUMNS = ("gold", "reference")
SCORE_GROUP = 16
"""Contexts per scorer call: each call holds every cell's responses to its contexts, so the
judge's prefix tree runs each context once for the whole grid and each distinct response once;
the scores file grows group by group, and groups are what processes share under accelerate."""
OUTPUTS = ("sweep.json", "cells", "scores.jsonl", "q2.jsonl", "sweep.csv", "best.json", "heatmaps", "report.html")


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
    """Run (or resume) the sweep ``config`` describes; return its table, best cell and Table-5 markdown."""
    config.validate()
    out = Path(config.out)
    contexts = read_contexts(config)
    _claim(out, config, restart)
    cells = config.cells()
    responses = generate_cells(config, contexts, cells, out)
    pmi = q2 = None
    if "pmi-faith" in config.metrics:
        _warn_if_self_judged(config)
        pmi = score_responses(out / "scores.jsonl", lambda: _judge(config), contexts, cells, responses, "PMI-FAITH")
    if "q2" in config.metrics:
        q2 = score_responses(out / "q2.jsonl", lambda: _q2(config), contexts, cells, responses, "Q²")

    golds = [c.gold for c in contexts] if all(c.gold for c in contexts) else None
    table = []
    for cell in cells:
        texts = [responses[cell][c.id] for c in contexts]
        scores = [pmi[_score_id(cell, c)].get("pmi") for c in contexts] if pmi else []
        q2_rows = [q2[_score_id(cell, c)] for c in contexts] if q2 else None
        table.append(cell_row(config, cell.alpha, cell.top_p, [c.document for c in contexts], texts, golds, scores,
                              q2_rows))
    best = choose_best(table, config.faithfulness, config.relevance, config.tolerance)
    if current_process().is_main:
        write_csv(table, out / "sweep.csv")
        (out / "best.json").write_text(json.dumps(best, indent=2) + "\n", encoding="utf-8")

        from .plots import heatmaps
        from .report import write_report

        heatmaps(table, config, out / "heatmaps", best)
        write_report(out / "report.html", config, contexts, cells, responses, pmi, q2, table, best)
    return SweepResult(table, best, markdown_table(table, config, best), out)


def read_contexts(config: SweepConfig) -> list[Context]:
    """The first ``limit`` rows of the input with their gold responses; unusable rows are skipped with a warning."""
    columns = Columns(document=config.document_column, history=config.history_column, id=config.id_column,
                      response=config.gold_column, required=("document",))
    rows = list(read_rows(config.input_path(), columns, quoting=config.quoting, split=config.split))[: config.limit]
    unique_ids(rows)
    contexts = []
    for row in rows:
        if row.error:
            logger.warning("row %s skipped: %s", row.id, row.error)
            continue
        gold = row.response if config.gold_column else next(
            (str(row.extras[name]) for name in GOLD_COLUMNS if row.extras.get(name)), row.response)
        contexts.append(Context(row.id, row.document, tuple(row.history), gold or None))
    if not contexts:
        raise InputError(f"{config.input_path()}: no usable row to generate for (see the warnings above)")
    if "lexical" in config.metrics and not all(c.gold for c in contexts):
        missing = sum(not c.gold for c in contexts)
        logger.warning("%d of %d rows have no gold response (a gold/reference column, else the response column, or "
                       "--gold-column): the relevance columns bleu and token_f1 stay empty", missing, len(contexts))
    return contexts


def _claim(out: Path, config: SweepConfig, restart: bool) -> None:
    """Make ``out`` this sweep's folder; stop if its outputs were made with other settings, unless restarting."""
    manifest = out / "sweep.json"
    wanted = {**config.generation_fingerprint(), "judge": config.judge, "q2_preset": config.q2_preset}
    made_with = {key: out / "cells" for key in config.generation_fingerprint()}
    made_with.update(judge=out / "scores.jsonl", q2_preset=out / "q2.jsonl")
    if not restart and manifest.exists():
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        changed = [f"{key}: {recorded.get(key)!r} -> {value!r}" for key, value in wanted.items()
                   if made_with[key].exists() and recorded.get(key) != value]
        if changed:
            raise OutputError(f"{out} holds a sweep made with other settings ({'; '.join(changed)}); rerun with "
                              "those settings to continue it, add --restart to start over, or choose another --out")
    process = current_process()
    if process.is_main:
        if restart:
            for name in OUTPUTS:
                target = out / name
                shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps(wanted, indent=2) + "\n", encoding="utf-8")
    process.wait()


def generate_cells(config: SweepConfig, contexts: list[Context], cells: list[Cell], out: Path) -> dict:
    """Generate every cell's missing responses into ``cells/<cell>.jsonl``; return ``{cell: {row id: response}}``.

    Each batch of contexts is prepared once for all its unfinished cells
    (:func:`faithkit.decoding.iter_grid`), and a cell's responses are written as soon as it
    finishes the batch. A batch a cell has partly written is regenerated whole for that cell
    (only the missing rows are written), so its batch, and thus its tokens, are the usual ones.
    Under ``accelerate launch`` each process takes every n-th unfinished batch.
    """
    from ..decoding import iter_grid, length_order

    options = config.generation_options()
    order = length_order([c.document for c in contexts], [c.history for c in contexts])
    batches = [[contexts[i] for i in order[start:start + config.batch_size]]
               for start in range(0, len(order), config.batch_size)]
    paths = {cell: out / "cells" / f"{cell.name}.jsonl" for cell in cells}
    process = current_process()
    with shared_outputs(paths, {cell: dict.fromkeys(c.id for c in contexts) for cell in cells},
                        flag="--out") as shared:
        for cell in cells:
            _check_resumed(paths[cell], {c.id: (c, None) for c in contexts})
        todo = [(batch, [cell for cell in cells if not all(c.id in shared.done[cell] for c in batch)])
                for batch in batches]
        todo = [(batch, pending) for batch, pending in todo if pending][process.rank::process.world]
        if todo:
            model, tokenizer = _load_generator(config)
        for number, (batch, pending) in enumerate(todo, start=1):
            started = time.monotonic()
            kwargs = options.grid_kwargs(model, tokenizer, ids=[c.id for c in batch])
            grid = iter_grid(model, tokenizer, [c.document for c in batch], [c.history for c in batch],
                             [(cell.strategy, config.search) for cell in pending], **kwargs)
            for index, positions, texts in grid:
                cell = pending[index]
                for position, text in zip(positions, texts):
                    context = batch[position]
                    if context.id not in shared.done[cell]:
                        shared.writers[cell].write({"id": context.id, "document": context.document,
                                                    "history": list(context.history), "gold": context.gold,
                                                    "response": text})
            logger.info("generate: batch %d/%d (%d contexts x %d cells) in %.0f s", number, len(todo), len(batch),
                        len(pending), time.monotonic() - started)
    wanted = {c.id for c in contexts}
    return {cell: {r["id"]: r["response"] for r in read_results(paths[cell]) if r["id"] in wanted} for cell in cells}


def _load_generator(config: SweepConfig):
    from .. import models

    return models.load(config.generator, kind=models.model_kind(config.generator), device=config.device)


def _judge(config: SweepConfig):
    from ..metrics import PMIFaith

    return PMIFaith(model=config.judge, device=config.device, unconditional=False)


def _q2(config: SweepConfig):
    from ..metrics import load_metric

    return load_metric("q2", preset=config.q2_preset, device=config.device)


def _warn_if_self_judged(config: SweepConfig) -> None:
    from .. import models

    if models.resolve(config.judge) == models.resolve(config.generator):
        logger.warning("the judge %s is also the generator: PMI-DECODE chose its tokens to raise this model's own "
                       "PMI, so PMI-FAITH under it favours the PMI-DECODE cells by construction; judge with another "
                       "model (--judge) for a fair comparison", config.judge)


def _score_id(cell: Cell, context: Context) -> str:
    return f"{cell.name}/{context.id}"


def score_responses(path: Path, load_metric, contexts: list[Context], cells: list[Cell], responses: dict,
                    desc: str) -> dict[str, dict]:
    """Score every cell's responses into ``path`` (resuming it); return every record by id ``<cell>/<row id>``.

    Contexts go in fixed groups of :data:`SCORE_GROUP`, and one ``compute_rows`` call covers all
    cells' responses to a group, each distinct response once. A group with any record missing
    is scored whole again (only the missing records are written), so every score comes from
    the same call as in an uninterrupted run, to the last bit, however many processes share
    the groups under ``accelerate launch``. Empty responses get a record without a score; a call
    that fails on one bad response (too long for the judge) is redone response by response, so
    only that one gets an ``error``.
    """
    ids = [_score_id(cell, c) for c in contexts for cell in cells]
    process = current_process()
    with shared_outputs({path: path}, {path: dict.fromkeys(ids)}, flag="--out") as shared:
        done, writer = shared.done[path], shared.writers[path]
        _check_resumed(path, {_score_id(cell, c): (c, responses[cell][c.id]) for c in contexts for cell in cells})
        groups = [contexts[start:start + SCORE_GROUP] for start in range(0, len(contexts), SCORE_GROUP)]
        groups = [group for group in groups
                  if not all(_score_id(cell, c) in done for c in group for cell in cells)][process.rank::process.world]
        metric = load_metric() if groups else None
        for group in groups:
            started = time.monotonic()
            entries = [(cell, c) for c in group for cell in cells]
            unique = list(dict.fromkeys((c, responses[cell][c.id]) for cell, c in entries
                                        if responses[cell][c.id].strip()))
            results = {(c.id, text): result for (c, text), result in zip(unique, _compute(metric, unique))}
            for cell, context in entries:
                if _score_id(cell, context) in done:
                    continue
                text = responses[cell][context.id]
                writer.write({"id": _score_id(cell, context), "cell": cell.name, "alpha": cell.alpha,
                              "top_p": cell.top_p, "row": context.id, "document": context.document,
                              "history": list(context.history), "response": text,
                              **results.get((context.id, text), {})})
            logger.info("%s: %d responses (%d distinct) in %.0f s", desc, len(entries), len(unique),
                        time.monotonic() - started)
    return {record["id"]: record for record in read_results(path)}


def _check_resumed(path: Path, expected: dict[str, tuple[Context, str | None]]) -> None:
    """Stop if a record already in ``path`` answers another context (or scores another response) than its id now
    names: the input, its ids or the generation changed, and resuming would pair rows with others' results."""
    for record in read_results(path):
        if record["id"] not in expected or "error" in record:
            continue
        context, response = expected[record["id"]]
        if (record.get("document"), record.get("history")) != (context.document, list(context.history)) or \
                (response is not None and record.get("response") != response):
            raise OutputError(f"{path}: the record of '{record['id']}' was made for another "
                              f"{'context' if response is None else 'response'} than row '{context.id}' of the input "
                              "has now (the input, its ids or the generation changed); add --restart to start over, "
                              "or choose another --out")


def _compute(metric, items: list[tuple[Context, str]]) -> list[dict]:
    """``metric.compute_rows`` over all items at once; if one item is bad, item by item with an error for it."""
    if not items:
        return []

    def call(batch):
        return metric.compute_rows([c.document for c, _ in batch], [c.history for c, _ in batch],
                                   [text for _, text in batch])

    try:
        return call(items)
    except ValueError:
        results = []
        for item in items:
            try:
                results.extend(call([item]))
            except ValueError as error:
                results.append({"error": str(error)})
        return results
