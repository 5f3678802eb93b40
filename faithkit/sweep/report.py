"""``report.html``: one self-contained page to read a sweep's responses side by side.

The page opens with every cell's faithfulness and relevance (with their intervals) and the
chosen cell, then shows a sample of contexts: each with its document, history and gold
response, and every cell's response beside its name, its tokens coloured by their PMI-FAITH
contribution under the judge (:func:`faithkit.eval.explain.highlight_tokens`, the colouring of ``faithkit explain``).
No scripts, no external assets.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from ..eval.explain import CSS, highlight_tokens, pmi_colour, pmi_legend
from ..decoding import Cell
from .config import SweepConfig, decoded_by
from .table import format_interval, format_value, label, parameter_names

SWEEP_CSS = """
table.grid { border-collapse: collapse; width: 100%; table-layout: fixed; margin-top: 8px; }
table.grid th, table.grid td { border: 1px solid #e3e5ea; padding: 6px 8px; vertical-align: top; font-size: 14px; }
table.grid th { background: #f0f1f4; width: 220px; text-align: left; }
table.grid td.best { outline: 3px solid #d9534f; outline-offset: -3px; }
.scores { font-size: 11px; color: #555; margin-bottom: 3px; }
.gold { font-size: 14px; margin: 4px 0; }
.gold b, .history b { color: #555; }
.empty { color: #999; font-style: italic; }
"""


def sample_contexts(contexts: Sequence, count: int) -> list:
    """``count`` contexts spread evenly over the input (all of them when there are fewer)."""
    if count >= len(contexts):
        return list(contexts)
    return [contexts[round(i * len(contexts) / count)] for i in range(count)]


def write_report(path: Path, config: SweepConfig, contexts: Sequence, cells: Sequence[Cell], responses: dict,
                 pmi: dict | None, q2: dict | None, table: Sequence[dict], best: dict) -> Path:
    """Write the page (see the module docstring); ``pmi``/``q2`` map ``<cell>/<row id>`` to score records."""
    chosen = (best.get("best") or {}).get("cell")
    parameters = parameter_names(table)
    rows = {row["cell"]: row for row in table}
    summary = _cell_table(cells, chosen, lambda cell: _summary_cell(rows[cell.label], config), parameters, rows)
    cards = []
    for context in sample_contexts(contexts, config.report_contexts):
        def response(cell, context=context):
            key = f"{decoded_by(cell).label}/{context.id}"
            return _response_cell(responses[cell][context.id], (pmi or {}).get(key), (q2 or {}).get(key))

        turns = "".join(f"<div>{escape(str(turn))}</div>" for turn in context.history)
        cards.append(
            f'<section class="card"><div class="head">row {escape(context.id)}</div>'
            + (f'<div class="history"><b>History:</b>{turns}</div>' if turns else "")
            + f'<div class="document"><b>Document:</b> {escape(context.document)}</div>'
            + f'<p class="gold"><b>Gold:</b> {escape(context.gold or "—")}</p>'
            + _cell_table(cells, chosen, response, parameters, rows) + "</section>"
        )
    best_line = (f"best: {escape(label(best['best'], parameters))} — {escape(best['rule'])}"
                 if chosen else f"no best cell: {escape(best['rule'])}")
    header = (
        f"<header><h1>faithkit sweep: {escape(str(config.generator))}</h1><div class=\"summary\">"
        f"<span>contexts <b>{len(contexts)}</b></span><span>judge <b>{escape(str(config.judge))}</b></span>"
        f"<span>cells <b>{len(cells)}</b></span></div>"
        f"<div class=\"controls\">{pmi_legend()} · the chosen cell is framed in red</div></header>"
    )
    page = (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>faithkit sweep</title>"
        f"<style>{CSS}{SWEEP_CSS}</style></head><body>\n{header}\n<main>\n"
        f'<section class="card"><div class="head">{escape(config.faithfulness_measure)} / {escape(config.relevance)} '
        f"per cell (95% intervals) · {best_line}</div>{summary}</section>\n"
        + "\n".join(cards) + "\n</main></body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


def _cell_table(cells: Sequence[Cell], chosen: str | None, render, parameters, rows: dict) -> str:
    """One line per cell: its label, then ``render(cell)``."""
    lines = "".join(f'<tr><th>{escape(label(rows[cell.label], parameters))}</th>'
                    f'<td{" class=best" if cell.label == chosen else ""}>{render(cell)}</td></tr>' for cell in cells)
    return f'<table class="grid">{lines}</table>'


def _summary_cell(row: dict, config: SweepConfig) -> str:
    faith, relevance = config.faithfulness_measure, config.relevance
    return (f"<b>{format_interval(row, faith)}</b> / {format_interval(row, relevance)}"
            f'<div class="scores">{format_value("words", row.get("words"))} words · '
            f'empty {format_value("empty", row.get("empty"))} · repeated {format_value("repeated", row.get("repeated"))}'
            + (f' · fluency {format_value("fluency", row.get("fluency"))}' if row.get("fluency") is not None else "")
            + "</div>")


def _response_cell(text: str, scores: dict | None, q2: dict | None) -> str:
    if not text.strip():
        return '<span class="empty">(empty response)</span>'
    labels = []
    if scores and scores.get("pmi") is not None:
        labels.append(f'<span class="badge" style="background:{pmi_colour(scores["pmi"])}">pmi '
                      f'{scores["pmi"]:.2f}</span>')
    if q2 and q2.get("q2") is not None:
        labels.append(f"q2 {q2['q2']:.2f}")
    body = highlight_tokens(scores["tokens"], scores["token_pmi"]) if scores and "token_pmi" in scores \
        else escape(text)
    return (f'<div class="scores">{" ".join(labels)}</div>' if labels else "") + body
