"""``report.html``: one self-contained page to read a sweep's cells and responses side by side.

The page opens with the cell table, the one the sweep prints (:func:`~faithkit.sweep.table.shown_table`): per
cell every measure with its 95% interval and, where it has a direction, its paired p against the baseline and a
mark when that difference is significant; cells that decode alike share one line (``plain greedy = pmi greedy
alpha=0 …``), cells the rule left out are greyed with the reason, and a click on a column head
sorts by it. Beside it, the chosen cell with its trade-offs (each measure significantly worse
than the baseline), and a note when faith_judge's weights do not fit the scoring model, so that the choice fell back to
PMI-FAITH. Then a collapsible sample of contexts: each with its document, history and
gold response, and every distinct decode's response beside its name, its tokens coloured by
their PMI-FAITH contribution under the scoring model (:func:`faithkit.explain.highlight_tokens`, the
colouring of ``faithkit explain``). No external assets; a few lines of script sort the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from .. import provenance
from ..explain import CSS, highlight_tokens, pmi_colour, pmi_legend
from ..data.files import write_text
from .config import SweepConfig
from .table import best_sentence, folded_rows, parameter_names, shown_columns, shown_label, shown_table, status

SWEEP_CSS = """
table.grid { border-collapse: collapse; width: 100%; table-layout: fixed; margin-top: 8px; }
table.grid th, table.grid td { border: 1px solid #e3e5ea; padding: 6px 8px; vertical-align: top; font-size: 14px; }
table.grid th { background: #f0f1f4; width: 220px; text-align: left; }
table.grid td.best { outline: 3px solid #d9534f; outline-offset: -3px; }
.wide { overflow-x: auto; }  /* a narrow window scrolls the cell table, not the page */
table.cells th { cursor: pointer; white-space: nowrap; }
table.cells td:first-child { min-width: 14em; }
table.cells th[data-order=ascending]::after { content: " \\25B2"; }
table.cells th[data-order=descending]::after { content: " \\25BC"; }
table.cells tr.best td { background: #fdecea; }
tr.excluded td, tr.excluded th { color: #999; background: #f4f4f4; }
tr.excluded .badge, tr.excluded span.tok { filter: grayscale(1); opacity: .6; }
.pick { margin: 8px 0 0; font-size: 14px; }
.note { margin: 8px 0 0; font-size: 14px; color: #8a5a00; background: #fff4e0; padding: 4px 8px; }
.scores { font-size: 11px; color: #555; margin-bottom: 3px; }
.gold { font-size: 14px; margin: 4px 0; }
.gold b, .history b { color: #555; }
.empty { color: #999; font-style: italic; }
details > summary { cursor: pointer; font-weight: 600; }
"""

SORT_SCRIPT = """
document.querySelectorAll("table.cells th").forEach(head => head.addEventListener("click", () => {
  const body = head.closest("table").tBodies[0], column = head.cellIndex;
  const order = head.dataset.order === "descending" ? "ascending" : "descending";
  head.closest("tr").querySelectorAll("th").forEach(other => delete other.dataset.order);
  head.dataset.order = order;
  const key = row => { const cell = row.cells[column], value = cell.dataset.value;
                       return value === undefined ? cell.textContent : value === "" ? null : Number(value); };
  const rows = [...body.rows].sort((a, b) => { const x = key(a), y = key(b);
    if (x === null || y === null) return (x === null) - (y === null);  // no value: last either way
    const by = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
    return order === "ascending" ? by : -by; });
  rows.forEach(row => body.appendChild(row));
}));
"""
"""Click a column head to sort the cell table by it (again to reverse); cells without a value go last."""


def sample_contexts(contexts: Sequence, count: int) -> list:
    """``count`` contexts spread evenly over the input (all of them when there are fewer)."""
    if count >= len(contexts):
        return list(contexts)
    return [contexts[round(i * len(contexts) / count)] for i in range(count)]


@dataclass
class SweepOutcome:
    """What the page shows of a finished sweep."""

    contexts: Sequence
    responses: dict  # cell label -> {row id: response}
    pmi: dict | None  # "<cell>/<row id>" -> pmi-faith's score record
    q2: dict | None  # the same for Q²
    table: Sequence[dict]  # one row per cell (sweep.csv)
    best: dict  # the chosen cell (best.json)
    checker: dict | None = None  # the same for a claim checker: its sentence scores


FLAGGED_BELOW = 0.5
"""A checker without a verdict (a hub preset's ``sentence_scores``) flags a response when one of its sentences has
P(supported) below this (its best document window's), the checker's even odds."""


def record_flag(record: dict) -> tuple[bool, str | None, float | None] | None:
    """Whether the claim checker flags one scored response, and the sentence that failed with its P(unsupported)
    (faithkit's three-way checker: its verdict, its ``sentences`` unsupported first) or its P(supported) (a hub
    preset: its worst ``sentence_scores``, text left to the caller); None for a response it did not score."""
    verdict = next((value for key, value in record.items() if key.endswith("_verdict")), None)
    if verdict is not None and record.get("sentences"):
        if verdict:
            return False, None, None
        first = record["sentences"][0]
        return True, first["text"], first["unsupported"]
    scores = record.get("sentence_scores")
    if not scores:
        return None
    worst = min(scores)
    return (True, None, worst) if worst < FLAGGED_BELOW else (False, None, None)


def checker_flags(outcome: SweepOutcome) -> dict[str, tuple[int, int, str | None, str | None]]:
    """Per cell of the table (a folded cell under its decode's scores): how many of its responses the claim checker
    flags (:func:`record_flag`), how many it scored, and the first flagged response's failing sentence with what
    the checker said of it (``P(unsupported) 0.81`` or ``P(supported) 0.12``); an empty dict without a checker."""
    if not outcome.checker:
        return {}
    from ..metrics.claim_windows import response_sentences

    found = {}
    for row in outcome.table:
        cell, flagged, scored, example, said = row["cell"], 0, 0, None, None
        for context in outcome.contexts:
            record = outcome.checker.get(f"{row['decodes_as'] or cell}/{context.id}") or {}
            flag = record_flag(record)
            if flag is None:
                continue
            scored += 1
            if not flag[0]:
                continue
            flagged += 1
            if example is not None:
                continue
            text, probability = flag[1], flag[2]
            if text is not None:
                example, said = text, f"P(unsupported) {probability:.2f}"
            else:  # a hub preset: its worst sentence, when the sentences still line up with its scores
                scores = record["sentence_scores"]
                sentences = response_sentences(outcome.responses[cell][context.id])
                if len(sentences) == len(scores):
                    example, said = sentences[scores.index(probability)], f"P(supported) {probability:.2f}"
        found[cell] = (flagged, scored, example, said)
    return found


def write_report(path: Path, config: SweepConfig, outcome: SweepOutcome, made_by: dict | None = None) -> Path:
    """Write the page (see the module docstring): the cell table, the pick, and the responses to a sample of the
    contexts."""
    contexts, table, best = outcome.contexts, outcome.table, outcome.best
    parameters = parameter_names(table)
    cards = [
        _context_card(number, context, outcome, parameters)
        for number, context in enumerate(sample_contexts(contexts, config.report_contexts))
    ]
    header = (
        f'<header><h1>faithkit sweep: {escape(str(config.generator))}</h1><div class="summary">'
        f"<span>contexts <b>{len(contexts)}</b></span><span>scoring model <b>{escape(str(config.scoring_model))}</b></span>"
        f"<span>cells <b>{len(table)}</b></span></div>"
        f'<div class="controls">{pmi_legend()} · the chosen cell is framed in red</div>'
        + (provenance.html(made_by) if made_by else "")
        + "</header>"
    )
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>faithkit sweep</title>'
        f"<style>{CSS}{SWEEP_CSS}</style></head><body>\n{header}\n<main>\n"
        f'<section class="card" id="cells"><div class="head">every cell: value [95% interval] and paired p against '
        f"the baseline; ▲/▼ significantly higher/lower at p &lt; {config.significance:g}; click a column to sort"
        f"</div>{_cells_table(table, config, best)}"
        + (f'<p class="note" id="note">{escape(config.faithfulness_note)}</p>' if config.faithfulness_note else "")
        + f'<p class="pick" id="pick">{escape(best_sentence(best, config, parameters))}</p></section>\n'
        + _checker_section(outcome)
        + f'<details open id="contexts"><summary>responses to {len(cards)} of {len(contexts)} contexts</summary>\n'
        + "\n".join(cards)
        + "\n</details>\n</main><script>"
        + SORT_SCRIPT
        + "</script></body></html>\n"
    )
    write_text(path, page)
    return path


def _context_card(number: int, context, outcome: SweepOutcome, parameters: list[str]) -> str:
    """One context's card: its history, document and gold response, and every cell's response with its scores."""
    rows = {row["cell"]: row for row in outcome.table}

    def response(cell):
        key = f"{rows[cell]['decodes_as'] or cell}/{context.id}"  # scores are kept under the decode's cell
        return _response_cell(
            outcome.responses[cell][context.id], (outcome.pmi or {}).get(key), (outcome.q2 or {}).get(key)
        )

    turns = "".join(f"<div>{escape(str(turn))}</div>" for turn in context.history)
    return (
        f'<details class="card context"{" open" if number == 0 else ""}><summary class="head">row '
        f"{escape(context.id)}</summary>"
        + (f'<div class="history"><b>History:</b>{turns}</div>' if turns else "")
        + f'<div class="document"><b>Document:</b> {escape(context.document)}</div>'
        + f'<p class="gold"><b>Gold:</b> {escape(context.gold or "—")}</p>'
        + _response_table(folded_rows(outcome.table), rows, outcome.best, response, parameters)
        + "</details>"
    )


def _cells_table(table: Sequence[dict], config: SweepConfig, best: dict) -> str:
    """The sortable cell table: :func:`~faithkit.sweep.table.shown_table`, the stdout table's entries in full."""
    shown = shown_table(table, config, best)
    heads = [
        "cell",
        *(column.removesuffix("_p") + " p" if column != m else m for column, m in shown_columns(config)),
        "choice",
    ]
    lines = []
    for cell, entries in shown.items():
        choice = entries[-1].text
        kind = "best" if choice == "best" else "excluded" if choice else ""
        measured = "".join(
            f'<td data-value="{_number(entry.value)}" data-measure="{escape(str(entry.column))}">{escape(entry.text)}</td>'
            for entry in entries[1:-1]
        )
        lines.append(
            f'<tr data-cell="{escape(cell)}"{f" class={kind}" if kind else ""}>'
            f"<td>{escape(entries[0].text)}</td>{measured}"
            f'<td class="choice">{escape(choice)}</td></tr>'
        )
    head = "".join(f"<th>{escape(name)}</th>" for name in heads)
    return (
        f'<div class="wide"><table class="cells"><thead><tr>{head}</tr></thead><tbody>{"".join(lines)}</tbody>'
        "</table></div>"
    )


def _checker_section(outcome: SweepOutcome) -> str:
    """Per cell, the share of responses the claim checker flags and one flagged sentence (:func:`checker_flags`)."""
    flags = checker_flags(outcome)
    if not flags:
        return ""
    lines = []
    for cell, (flagged, scored, example, said) in flags.items():
        share = f"{flagged / scored:.0%} ({flagged} of {scored})" if scored else "no scores"
        said = "—" if example is None else f"“{escape(example)}” ({said})"
        lines.append(f'<tr data-cell="{escape(cell)}"><td>{escape(cell)}</td><td>{share}</td><td>{said}</td></tr>')
    return (
        '<section class="card" id="checker"><div class="head">the claim checker\'s flags: responses it judges '
        "unfaithful, and the first one's failing sentence</div>"
        '<div class="wide"><table class="cells"><thead><tr><th>cell</th><th>flagged</th><th>example</th></tr></thead>'
        f"<tbody>{''.join(lines)}</tbody></table></div></section>\n"
    )


def _number(value) -> str:
    """A cell's sort key: the number, or empty for a missing one."""
    return "" if value is None or value != value else f"{value:.6g}"


def _response_table(shown: dict, rows: dict, best: dict, render, parameters) -> str:
    """One line per distinct decode: its label (with the cells folded into it), then ``render(cell)``; the chosen
    cell framed, excluded ones greyed."""
    lines = []
    for cell, folded in shown.items():
        choice = status(rows[cell], best, folded)
        picked, excluded = choice == "best", choice.startswith("excluded")
        lines.append(
            f'<tr data-cell="{escape(cell)}"{" class=excluded" if excluded else ""}>'
            f"<th>{escape(shown_label(rows[cell], folded, parameters))}</th>"
            f"<td{' class=best' if picked else ''}>{render(cell)}</td></tr>"
        )
    return f'<table class="grid">{"".join(lines)}</table>'


def _response_cell(text: str, scores: dict | None, q2: dict | None) -> str:
    if not text.strip():
        return '<span class="empty">(empty response)</span>'
    labels = []
    if scores and scores.get("pmi") is not None:
        labels.append(
            f'<span class="badge" style="background:{pmi_colour(scores["pmi"])}">pmi {scores["pmi"]:.2f}</span>'
        )
    if q2 and q2.get("q2") is not None:
        labels.append(f"q2 {q2['q2']:.2f}")
    body = highlight_tokens(scores["tokens"], scores["token_pmi"]) if scores and "token_pmi" in scores else escape(text)
    return (f'<div class="scores">{" ".join(labels)}</div>' if labels else "") + body
