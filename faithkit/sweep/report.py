"""``report.html``: one self-contained page to read a sweep's responses side by side.

The page opens with the Table-5 grid and the chosen cell, then shows a sample of contexts:
each with its document, history and gold response, and every cell's response laid out on
the same alpha x top_p grid, its tokens coloured by their PMI-FAITH contribution under the
judge (:func:`faithkit.eval.explain.highlight_tokens`, the colouring of ``faithkit explain``).
No scripts, no external assets.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from ..eval.explain import CSS, highlight_tokens, pmi_colour, pmi_legend
from .config import BASELINE, Cell, SweepConfig
from .table import format_value, grid_of

SWEEP_CSS = """
table.grid { border-collapse: collapse; width: 100%; table-layout: fixed; margin-top: 8px; }
table.grid th, table.grid td { border: 1px solid #e3e5ea; padding: 6px 8px; vertical-align: top; font-size: 14px; }
table.grid th { background: #f0f1f4; width: 70px; }
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
    chosen = best.get("best")
    chosen_cell = (chosen["alpha"], chosen["top_p"]) if chosen else None
    summary_grid = _grid_table(config, lambda alpha, top_p: _summary_cell(grid_of(table)[alpha, top_p], config),
                               chosen_cell)
    cards = []
    for context in sample_contexts(contexts, config.report_contexts):
        def response(alpha, top_p, context=context):
            cell = Cell(alpha, top_p)
            key = f"{cell.name}/{context.id}"
            return _response_cell(responses[cell][context.id], (pmi or {}).get(key), (q2 or {}).get(key))

        turns = "".join(f"<div>{escape(str(turn))}</div>" for turn in context.history)
        cards.append(
            f'<section class="card"><div class="head">row {escape(context.id)}</div>'
            + (f'<div class="history"><b>History:</b>{turns}</div>' if turns else "")
            + f'<div class="document"><b>Document:</b> {escape(context.document)}</div>'
            + f'<p class="gold"><b>Gold:</b> {escape(context.gold or "—")}</p>'
            + _grid_table(config, response, chosen_cell) + "</section>"
        )
    best_line = (f"best: alpha {chosen['alpha']:g}, top_p {chosen['top_p']:g} — {escape(best['rule'])}"
                 if chosen else f"no best cell: {escape(best['rule'])}")
    header = (
        f"<header><h1>faithkit sweep: {escape(str(config.generator))}</h1><div class=\"summary\">"
        f"<span>decoding <b>{escape(config.decoding)}</b></span><span>contexts <b>{len(contexts)}</b></span>"
        f"<span>judge <b>{escape(str(config.judge))}</b></span><span>cells <b>{len(cells)}</b></span></div>"
        f"<div class=\"controls\">{pmi_legend()} · the chosen cell is framed in red</div></header>"
    )
    page = (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>faithkit sweep</title>"
        f"<style>{CSS}{SWEEP_CSS}</style></head><body>\n{header}\n<main>\n"
        f'<section class="card"><div class="head">{escape(config.faithfulness)} / {escape(config.relevance)} '
        f"per cell · {best_line}</div>{summary_grid}</section>\n"
        + "\n".join(cards) + "\n</main></body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


def _grid_table(config: SweepConfig, render, chosen: tuple | None) -> str:
    """An alpha x top_p table of ``render(alpha, top_p)``, plus a baseline row when the grid lacks (0, 1)."""
    alphas, top_ps = [float(a) for a in dict.fromkeys(config.alpha)], [float(p) for p in dict.fromkeys(config.top_p)]
    head = "<tr><th>alpha \\ top_p</th>" + "".join(f"<th>{p:g}</th>" for p in top_ps) + "</tr>"
    rows = []
    for alpha in alphas:
        cells = "".join(f'<td{" class=best" if chosen == (alpha, p) else ""}>{render(alpha, p)}</td>' for p in top_ps)
        rows.append(f"<tr><th>{alpha:g}</th>{cells}</tr>")
    if not (BASELINE[0] in alphas and BASELINE[1] in top_ps):
        mark = " class=best" if chosen == BASELINE else ""
        rows.append(f'<tr><th>baseline</th><td{mark} colspan="{len(top_ps)}">{render(*BASELINE)}</td></tr>')
    return f'<table class="grid">{head}{"".join(rows)}</table>'


def _summary_cell(row: dict, config: SweepConfig) -> str:
    faith, relevance = config.faithfulness, config.relevance
    return (f"<b>{format_value(faith, row.get(faith))}</b> / {format_value(relevance, row.get(relevance))}"
            f'<div class="scores">{format_value("mean_words", row.get("mean_words"))} words · '
            f'empty {format_value("empty", row.get("empty"))} · repeated {format_value("repeated", row.get("repeated"))}'
            "</div>")


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
