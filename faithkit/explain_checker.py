"""The claim checker's page (``faithkit explain --metric faithkit-checker``): which sentence of each response failed,
and on which part of the document it was judged.

It draws records as ``faithkit score --metric faithkit-checker`` writes them (``{"id", "document", "history",
"response", "faithkit_checker", "faithkit_checker_verdict", …, "sentences"}``, each sentence ``{"text", "start",
"end", "supported", "generic", "unsupported", "window_start", "window_end"}``, the unsupported first), from the file
as it is: nothing is scored again. Each response's sentences are coloured from red (P(unsupported) 1) to green (0),
with their three probabilities on hover; beneath, a table lists them, the unsupported first, each with the document
window it was judged on. The rest of the page (order, header, the "only low" checkbox) is :mod:`faithkit.explain`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path

from .explain import score_colour, write_explain_html

PROBABILITIES = ("supported", "generic", "unsupported")
LEGEND = (
    'sentence colour: P(unsupported) 1<span class="scale"></span>0 · hover a sentence for its P(supported), '
    "P(generic) and P(unsupported); the table gives the document window each was judged on"
)


def _probabilities(sentence: dict) -> str:
    return " · ".join(f"P({name}) {float(sentence[name]):.2f}" for name in PROBABILITIES)


def highlight_sentences(response: str, sentences: Sequence[dict]) -> str:
    """The response as HTML, each judged sentence in a ``<mark>`` coloured by 1 - P(unsupported), its three
    probabilities on hover; text between sentences is left as it is."""
    pieces, at = [], 0
    for sentence in sorted(sentences, key=lambda item: item["start"]):
        start, end = sentence["start"], sentence["end"]
        pieces.append(escape(response[at:start]))
        title = escape(_probabilities(sentence), quote=True)
        colour = score_colour(1 - float(sentence["unsupported"]))
        pieces.append(f'<mark style="background:{colour}" title="{title}">{escape(response[start:end])}</mark>')
        at = max(at, end)
    return "".join(pieces) + escape(response[at:])


def _sentence_table(document: str, sentences: Sequence[dict]) -> str:
    header = "".join(f"<th>{name}</th>" for name in ("sentence", *(f"P({p})" for p in PROBABILITIES), "judged on"))
    rows = []
    for sentence in sentences:  # as the record lists them: the unsupported first
        colour = score_colour(1 - float(sentence["unsupported"]))
        window = document[sentence["window_start"] : sentence["window_end"]]
        rows.append(
            f'<tr><td><mark style="background:{colour}">{escape(str(sentence["text"]))}</mark></td>'
            + "".join(f'<td class="num">{float(sentence[name]):.2f}</td>' for name in PROBABILITIES)
            + f"<td>{escape(window)}</td></tr>"
        )
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def checker_card(record: dict, score_key: str, low_threshold: float) -> str:
    """One response's card: its P(faithful) and verdict, its sentences coloured, the table of sentences."""
    record_id = escape(str(record.get("id", "")))
    if "error" in record:
        return (
            f'<section class="card error"><div class="head">row {record_id}</div>'
            f"<p>not scored: {escape(str(record['error']))}</p></section>"
        )
    score, verdict = record.get(score_key), record.get(f"{score_key}_verdict")
    low = score is not None and score < low_threshold
    sentences = record.get("sentences") or []
    history = record.get("history") or []
    turns = "".join(f"<div>{escape(str(turn))}</div>" for turn in ([history] if isinstance(history, str) else history))
    verdict_text = "" if verdict is None else (" · verdict: faithful" if verdict else " · verdict: not faithful")
    flag = (
        f'<span class="flag">{record["truncated_chars"]} characters of the document left unread</span>'
        if record.get("truncated_chars")
        else ""
    )
    badge = score_colour(score)
    shown = "—" if score is None else f"{float(score):.2f}"
    document = str(record.get("document", ""))
    return (
        f'<section class="card{" low" if low else ""}" id="row-{record_id}">'
        f'<div class="head"><span class="badge" style="background:{badge}">{shown}</span>row {record_id} · '
        f"{len(sentences)} sentence(s){verdict_text}{flag}</div>"
        + (f'<div class="history">{turns}</div>' if turns else "")
        + f'<p class="response">{highlight_sentences(str(record.get("response", "")), sentences)}</p>'
        f'<div class="document"><b>Knowledge:</b> {escape(document)}</div>'
        f"{_sentence_table(document, sentences)}</section>"
    )


def write_checker_html(records: Sequence[dict], path: str | Path, score_key: str, low_threshold: float = 0.5) -> Path:
    """The page for ``records`` (lowest P(faithful) first, errors last)."""
    return write_explain_html(
        records,
        path,
        score_key=score_key,
        low_threshold=low_threshold,
        title=f"faithkit explain: {score_key}",
        page=(checker_card, LEGEND),
    )
