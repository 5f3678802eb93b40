"""One self-contained HTML page that shows why Q² or PMI-FAITH scored each response as it did.

Q²: each response is printed with its informative spans highlighted from red (the knowledge
answers the span's question differently) to green (it agrees); hovering a span shows its
question, both answers, their F1 and the NLI label, and the same details are listed
beneath the response. PMI-FAITH: each token of the response is coloured by its
contribution ``log P(t | d, h, t<) - log P(t | h, t<)``, red where the document made it
less likely, green where it made it more likely (:func:`highlight_tokens`; the sweep's
report uses the same colouring); the faithfulness judge's records (``--metric faith-judge``)
also underline the tokens where the document wanted another token and show that evidence on hover. The lowest-scoring responses come first and a checkbox
hides the rest, so the inconsistent ones stand out. The page has no scripts and no
external assets: it can be mailed or attached to an issue as it is.

Records follow the output schema of ``faithkit score``: for Q²
``{"id", "document", "history", "response", "q2", "q2_no_nli", "fallback", "explanations"}``,
where each explanation is ``{"span", "start", "end", "question", "response_answer",
"knowledge_answer", "f1", "nli", "score"}``; for PMI-FAITH ``{…, "pmi", "tokens",
"token_pmi"}`` (the judge tokenizer's tokens). A row that could not be scored is
``{"id", "error"}``.
"""

from __future__ import annotations

import codecs
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from html import escape
from itertools import pairwise
from pathlib import Path

from .data.files import write_text

CSS = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 14px 28px; }
header h1 { font-size: 20px; margin: 0 0 6px; }
.summary span { display: inline-block; margin-right: 22px; }
.summary b { font-size: 17px; }
.controls { margin-top: 8px; font-size: 14px; }
.scale { display: inline-block; width: 140px; height: 10px; vertical-align: middle; margin: 0 6px;
         background: linear-gradient(to right, hsl(0,75%,78%), hsl(60,75%,78%), hsl(120,75%,78%)); }
main { padding: 14px 28px; max-width: 1100px; }
#only-low { display: none; }
#only-low:checked ~ main .card:not(.low) { display: none; }
.controls label { cursor: pointer; background: #39415a; border-radius: 4px; padding: 2px 8px; }
#only-low ~ header .controls label::before { content: "\\2610  "; }
#only-low:checked ~ header .controls label::before { content: "\\2611  "; }
.card { background: #fff; border-radius: 8px; padding: 12px 16px; margin-bottom: 14px;
        border-left: 6px solid #bbb; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
.card.low { border-left-color: #d9534f; }
.card.error { border-left-color: #888; background: #fafafa; }
.head { font-size: 13px; color: #555; margin-bottom: 4px; }
.badge { display: inline-block; min-width: 44px; text-align: center; font-weight: 700; color: #1d2330;
         border-radius: 4px; padding: 1px 6px; margin-right: 8px; font-size: 14px; }
.flag { background: #fff3cd; color: #7a5a00; border-radius: 4px; padding: 1px 6px; margin-left: 8px; }
.history { font-size: 13px; color: #555; margin: 2px 0 4px; }
.response { font-size: 17px; margin: 4px 0 8px; }
mark { border-radius: 3px; padding: 0 2px; cursor: help; color: inherit;
       border-bottom: 2px solid rgba(0,0,0,.25); }
mark sub { font-size: 10px; color: #333; margin-left: 1px; }
.document { font-size: 13px; color: #333; background: #f7f7f9; border-radius: 4px; padding: 6px 10px; }
.document b { color: #555; }
table { border-collapse: collapse; font-size: 13px; margin-top: 8px; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
th { color: #555; font-weight: 600; }
td.num { white-space: nowrap; }
.none { color: #999; font-style: italic; }
.pmi-scale { background: linear-gradient(to right, hsl(0,75%,72%), #fff, hsl(120,75%,72%)); }
span.tok { border-radius: 2px; cursor: help; white-space: pre-wrap; }
"""


def score_colour(score) -> str:
    """Red (0) through yellow to green (1) as a CSS colour; grey when there is no score."""
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return "#ddd"
    return f"hsl({120 * min(max(float(score), 0.0), 1.0):.0f},75%,78%)"


PMI_SCALE = 2.0
"""A token whose document effect reaches this many nats (either way) gets the full colour."""


def pmi_colour(value, scale: float = PMI_SCALE) -> str:
    """White (no effect of the document) to red (the document made it less likely) or green (more likely)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "#ddd"
    strength = min(abs(float(value)) / scale, 1.0)
    return f"hsl({120 if value > 0 else 0},75%,{100 - 28 * strength:.0f}%)"


_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _byte_of_character() -> dict[str, int]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return {character: byte for byte, character in bytes_to_unicode().items()}


def token_texts(tokens: Sequence[str]) -> list[str]:
    """The readable text of each token of a causal LM's tokenizer, without loading the tokenizer.

    Byte-level BPE tokens (GPT-2, SmolLM2, BLOOM: ``Ġ`` for a space) map back to bytes through
    GPT-2's byte alphabet; SentencePiece tokens (Gemma, Llama: ``▁`` for a space, ``<0xNN>``
    for a raw byte) are read as UTF-8 with ``▁`` as a space. A character split over several
    tokens appears at the token that completes it, so the texts join to the decoded response.
    """
    sentencepiece = any("\u2581" in token or _BYTE_TOKEN.fullmatch(token) for token in tokens)
    alphabet = _byte_of_character()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    texts = []
    for token in tokens:
        if sentencepiece:
            byte = _BYTE_TOKEN.fullmatch(token)
            data = bytes([int(byte.group(1), 16)]) if byte else token.replace("\u2581", " ").encode()
        elif all(character in alphabet for character in token):
            data = bytes(alphabet[character] for character in token)
        else:
            data = token.encode()
        texts.append(decoder.decode(data))
    if texts:
        texts[-1] += decoder.decode(b"", final=True)
    return texts


CONFLICT_MARK = 1.0
"""A token is underlined when the document-conditioned model prefers another token by at least this many nats and
the document raised that token by at least as much (``faithkit.metrics.token_evidence``'s conflict)."""


def highlight_tokens(
    tokens: Sequence[str], token_pmi: Sequence[float], scale: float = PMI_SCALE, evidence: dict | None = None
) -> str:
    """The response as HTML, each token on a background of :func:`pmi_colour` with its value (nats) on hover.

    ``evidence`` (the record's ``token_js``, ``token_prefers_other``, ``token_top_margin``,
    ``token_top_raise`` lists, as ``faith-judge`` and ``PMIFaith(evidence=True)`` write them) adds
    them to the hover text and underlines in red the tokens where the document wanted another token.
    """
    pieces = []
    for i, (text, value) in enumerate(zip(token_texts(tokens), token_pmi)):
        title, style = f"{value:+.2f}", f"background:{pmi_colour(value, scale)}"
        if evidence:
            title += f" · JS {evidence['token_js'][i]:.3f}"
            if evidence["token_prefers_other"][i]:
                margin, raised = evidence["token_top_margin"][i], evidence["token_top_raise"][i]
                title += f" · the document prefers another token by {margin:.2f}, raising it by {raised:+.2f}"
                if min(margin, raised) >= CONFLICT_MARK:
                    style += ";border-bottom:3px solid hsl(0,80%,40%)"
        pieces.append(f'<span class="tok" style="{style}" title="{title}">{escape(text)}</span>')
    return "".join(pieces)


EVIDENCE_KEYS = ("token_js", "token_prefers_other", "token_top_margin", "token_top_raise")


def _number(value, digits: int = 2) -> str:
    return "—" if value is None else f"{float(value):.{digits}f}"


def _locate(response: str, item: dict) -> tuple[int, int] | None:
    """Character offsets of an explanation's span; found by text when the offsets don't match it."""
    span = str(item.get("span") or "")
    start, end = item.get("start"), item.get("end")
    if (
        isinstance(start, int)
        and isinstance(end, int)
        and 0 <= start < end <= len(response)
        and (not span or response[start:end] == span)
    ):
        return start, end
    if span:
        found = response.lower().find(span.lower())
        if found >= 0:
            return found, found + len(span)
    return None


def _tooltip(item: dict) -> str:
    lines = [
        f"question: {item.get('question') or '—'}",
        f"response answer: {item.get('response_answer') or '—'}",
        f"knowledge answer: {item.get('knowledge_answer') or 'no answer'}",
        f"F1: {_number(item.get('f1'))}   NLI: {item.get('nli') or '—'}   score: {_number(item.get('score'))}",
    ]
    return "\n".join(lines)


def highlight_response(response: str, explanations: Sequence[dict]) -> str:
    """The response as HTML with each explained span in a coloured ``<mark>`` carrying its tooltip.

    Overlapping spans are split at every boundary; a piece covered by several spans takes
    the lowest score's colour (the most doubtful reading) and all their tooltips.
    """
    located = [(*where, item) for item in explanations if (where := _locate(response, item))]
    cuts = sorted({0, len(response), *(p for start, end, _ in located for p in (start, end))})
    pieces = []
    for left, right in pairwise(cuts):
        text = escape(response[left:right])
        covering = [(end, item) for start, end, item in located if start <= left and right <= end]
        if not covering:
            pieces.append(text)
            continue
        scores = [score for _, item in covering if (score := item.get("score")) is not None]
        lowest = min(scores) if scores else None
        label = f"<sub>{_number(lowest, 1)}</sub>" if any(end == right for end, _ in covering) else ""
        title = escape("\n\n".join(_tooltip(item) for _, item in covering), quote=True)
        pieces.append(f'<mark style="background:{score_colour(lowest)}" title="{title}">{text}{label}</mark>')
    return "".join(pieces)


def _details_table(explanations: Sequence[dict]) -> str:
    if not explanations:
        return '<p class="none">No span got a valid question.</p>'
    header = "".join(
        f"<th>{name}</th>" for name in ("span", "question", "response answer", "knowledge answer", "F1", "NLI", "score")
    )
    rows = []
    for item in explanations:
        knowledge_answer = item.get("knowledge_answer")
        cells = [
            f'<td><mark style="background:{score_colour(item.get("score"))}">{escape(str(item.get("span", "")))}</mark></td>',
            f"<td>{escape(str(item.get('question') or '—'))}</td>",
            f"<td>{escape(str(item.get('response_answer') or '—'))}</td>",
            f"<td>{escape(str(knowledge_answer))}</td>" if knowledge_answer else '<td class="none">no answer</td>',
            f'<td class="num">{_number(item.get("f1"))}</td>',
            f"<td>{escape(str(item.get('nli') or '—'))}</td>",
            f'<td class="num">{_number(item.get("score"))}</td>',
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def _card(record: dict, score_key: str, low_threshold: float) -> str:
    record_id = escape(str(record.get("id", "")))
    if "error" in record:
        return (
            f'<section class="card error"><div class="head">row {record_id}</div>'
            f"<p>not scored: {escape(str(record['error']))}</p></section>"
        )
    score = record.get(score_key)
    low = score is not None and score < low_threshold
    history = record.get("history") or []
    history = [history] if isinstance(history, str) else history
    turns = "".join(f"<div>{escape(str(turn))}</div>" for turn in history)
    if "token_pmi" in record:  # PMI-FAITH: every token coloured by the document's effect on it
        badge = score_colour(score) if score_key == "faith_judge" else pmi_colour(score)  # the judge's is in (0, 1)
        head = f"row {record_id} · {len(record['token_pmi'])} token(s)"
        evidence = {key: record[key] for key in EVIDENCE_KEYS} if all(k in record for k in EVIDENCE_KEYS) else None
        response = highlight_tokens(record.get("tokens") or [], record["token_pmi"], evidence=evidence)
        details = ""
    else:
        explanations = record.get("explanations") or []
        extra = (
            f" · {escape(score_key)}_no_nli {_number(record.get(score_key + '_no_nli'))}"
            if record.get(score_key + "_no_nli") is not None
            else ""
        )
        flag = (
            '<span class="flag">fallback: no valid question, scored by end-to-end NLI</span>'
            if record.get("fallback")
            else ""
        )
        badge = score_colour(score)
        head = f"row {record_id} · {len(explanations)} question(s){extra}{flag}"
        response = highlight_response(str(record.get("response", "")), explanations)
        details = _details_table(explanations)
    return (
        f'<section class="card{" low" if low else ""}" id="row-{record_id}">'
        f'<div class="head"><span class="badge" style="background:{badge}">{_number(score)}</span>{head}</div>'
        + (f'<div class="history">{turns}</div>' if turns else "")
        + f'<p class="response">{response}</p>'
        f'<div class="document"><b>Knowledge:</b> {escape(str(record.get("document", "")))}</div>'
        f"{details}</section>"
    )


def is_explained(path) -> bool:
    """A JSONL whose first scored record already explains its score (Q² spans, PMI-FAITH token values) needs no
    scoring. Only records up to the first scored one are read; a line that is not a JSON object means rows, whose
    reader reports it."""
    import json
    from pathlib import Path

    if Path(path).suffix.lower() != ".jsonl":
        return False
    with open(path, encoding="utf-8-sig", errors="replace") as lines:
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                return False
            if not isinstance(record, dict):
                return False
            if "error" not in record:
                return any(key in record for key in ("explanations", "token_pmi", "sentences"))
    return False


def check_explained(records: Sequence[dict], source) -> None:
    """The explanation fields of records read back have the shapes the page draws (Q² ``explanations``: a list of
    objects whose ``score``, ``f1``, ``start`` and ``end`` are numbers or null; PMI-FAITH ``token_pmi``: a list of
    numbers or nulls, ``tokens`` a list of strings; the claim checker's ``sentences``: a list of objects with numbers
    for :data:`SENTENCE_NUMBERS`); otherwise an InputError naming the file, record and field."""
    import json

    from .errors import InputError

    def number(value) -> bool:
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))

    def fail(record, field, expected):
        shown = json.dumps(record[field], ensure_ascii=False)[:60]
        raise InputError(
            f"{source}: record '{record.get('id')}' has {field} {shown} where {expected} is expected; "
            f"fix the file, or score its rows again"
        )

    for record in records:
        explanations = record.get("explanations")
        if explanations is not None and not (
            isinstance(explanations, list)
            and all(
                isinstance(item, dict) and all(number(item.get(key)) for key in ("score", "f1", "start", "end"))
                for item in explanations
            )
        ):
            fail(record, "explanations", "a list of objects with numbers (or null) for score, f1, start and end")
        if "token_pmi" in record and not (
            isinstance(record["token_pmi"], list) and all(map(number, record["token_pmi"]))
        ):
            fail(record, "token_pmi", "a list of numbers (or nulls)")
        sentences = record.get("sentences")
        if sentences is not None and not (
            isinstance(sentences, list)
            and all(
                isinstance(item, dict)
                and all(item.get(key) is not None and number(item[key]) for key in SENTENCE_NUMBERS)
                for item in sentences
            )
        ):
            fail(record, "sentences", f"a list of objects with numbers for {', '.join(SENTENCE_NUMBERS)}")
        if "tokens" in record and not (
            isinstance(record["tokens"], list) and all(isinstance(token, str) for token in record["tokens"])
        ):
            fail(record, "tokens", "a list of strings")


SENTENCE_NUMBERS = ("start", "end", "supported", "generic", "unsupported", "window_start", "window_end")
"""The numbers each sentence of a claim checker's record holds."""


def summarize_records(records: Sequence[dict], score_key: str = "q2", low_threshold: float = 0.5) -> dict:
    """Counts behind the page's header: responses, mean score, question coverage, low-scoring, errors."""
    scored = [r for r in records if "error" not in r and r.get(score_key) is not None]
    return {
        "responses": len(scored),
        "errors": len(records) - len(scored),
        "mean": sum(float(r[score_key]) for r in scored) / len(scored) if scored else math.nan,
        # share answered by questions rather than the fallback; None for metrics without a fallback
        "coverage": sum(1 for r in scored if not r.get("fallback")) / len(scored)
        if any("fallback" in r for r in scored)
        else None,
        "low": sum(1 for r in scored if float(r[score_key]) < low_threshold),
    }


def pmi_legend() -> str:
    """The colour key of :func:`highlight_tokens`, as inline HTML."""
    return (
        f"token colour: log P(token | document, history) − log P(token | history), the document made it less "
        f'likely −{PMI_SCALE:g}<span class="scale pmi-scale"></span>+{PMI_SCALE:g} more likely (nats) · '
        "hover a token for its value (with the judge's evidence: its JS divergence and the token the document "
        "prefers; a red underline where the document wanted another token)"
    )


def _legend(records: Sequence[dict]) -> str:
    if any("token_pmi" in record for record in records):
        return pmi_legend()
    return 'span colour: 0<span class="scale"></span>1 · hover a span for its question and answers'


def write_explain_html(
    records: Sequence[dict],
    path: str | Path,
    score_key: str = "q2",
    low_threshold: float = 0.5,
    title: str | None = None,
    page: tuple[Callable[[dict, str, float], str], str] | None = None,
) -> Path:
    """Write the page for ``records`` to ``path``, lowest score first, errors last; return the path.

    ``low_threshold``: responses scoring below it are marked low (red edge) and are the
    ones kept by the page's "only low-scoring" checkbox (for PMI-FAITH, 0 marks the responses
    the document did not make more likely). Records with ``token_pmi`` (PMI-FAITH) get their
    tokens coloured, records with ``explanations`` (Q²) their spans; ``page`` is another metric's card (a function of
    a record, the score key and the threshold) and legend (:mod:`faithkit.explain_checker`).
    """
    card, legend = page or (_card, _legend(records))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = summarize_records(records, score_key, low_threshold)
    ordered = sorted(
        records, key=lambda r: (1, 0.0) if "error" in r or r.get(score_key) is None else (0, float(r[score_key]))
    )
    title = title or f"faithkit explain: {score_key}"
    mean = "—" if math.isnan(summary["mean"]) else f"{summary['mean']:.3f}"
    header = (
        f'<header><h1>{escape(title)}</h1><div class="summary">'
        f"<span>responses <b>{summary['responses']}</b></span>"
        f"<span>mean {escape(score_key)} <b>{mean}</b></span>"
        + (
            f"<span>question coverage <b>{summary['coverage']:.0%}</b></span>"
            if summary["coverage"] is not None
            else ""
        )
        + f"<span>below {low_threshold:g} <b>{summary['low']}</b></span>"
        + (f"<span>not scored <b>{summary['errors']}</b></span>" if summary["errors"] else "")
        + '</div><div class="controls"><label for="only-low">show only responses below '
        f"{low_threshold:g}</label> · {legend}</div></header>"
    )
    cards = "\n".join(card(record, score_key, low_threshold) for record in ordered)
    page = (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<style>{CSS}</style></head><body>\n<input type="checkbox" id="only-low">\n{header}\n'
        f"<main>\n{cards}\n</main></body></html>\n"
    )
    write_text(path, page)
    return path
