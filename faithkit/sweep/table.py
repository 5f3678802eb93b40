"""One row of measures per grid cell, the paper's Table-5 layout, and the rule that picks the operating point."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from pathlib import Path

from .config import BASELINE, SweepConfig

REPEAT_RUN = 3
"""A response is *repeated* when one word comes this many times in a row ("no no no"), or one
three-word sequence this many times anywhere ("i love it. i love it. i love it."): the loops
greedy and beam search fall into, which PMI-DECODE's narrow top-p sets can make worse."""
_WORD = re.compile(r"\w+")
COLUMNS = ("decoding", "alpha", "top_p", "n", "pmi_faith", "knowledge_precision", "bleu", "token_f1", "mean_words",
           "empty", "repeated")
Q2_COLUMNS = ("q2", "q2_no_nli")


def is_repeated(response: str) -> bool:
    """Whether the response loops (see :data:`REPEAT_RUN`); words are lowercased ``\\w+`` runs."""
    words = _WORD.findall(response.lower())
    for start in range(len(words) - REPEAT_RUN + 1):
        if len(set(words[start:start + REPEAT_RUN])) == 1:
            return True
    trigrams: dict[tuple, int] = {}
    for start in range(len(words) - 2):
        gram = tuple(words[start:start + 3])
        trigrams[gram] = trigrams.get(gram, 0) + 1
        if trigrams[gram] >= REPEAT_RUN:
            return True
    return False


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def cell_row(config: SweepConfig, alpha: float, top_p: float, documents: Sequence[str], responses: Sequence[str],
             golds: Sequence[str] | None, pmi: Sequence[float | None], q2: Sequence[dict] | None) -> dict:
    """The measures of one cell from its responses (in context order) and their scores.

    ``pmi_faith``, ``q2`` and ``q2_no_nli`` average the responses that have a score (empty
    responses have none); ``bleu`` is sacrebleu's corpus BLEU over every response, empty ones
    included; ``token_f1`` and ``mean_words`` average every response; ``knowledge_precision``
    those with a content word; ``empty`` and ``repeated`` are shares of the responses.
    """
    row = {"decoding": config.decoding, "alpha": alpha, "top_p": top_p, "n": len(responses)}
    row["pmi_faith"] = _mean(pmi) if "pmi-faith" in config.metrics else None
    if "lexical" in config.metrics:
        from ..metrics import load_metric

        lexical = load_metric("lexical").compute(documents, None, responses, references=golds)
        row["knowledge_precision"] = lexical["mean_knowledge_precision"]
        row["bleu"] = lexical.get("corpus_bleu")
        row["token_f1"] = lexical.get("mean_token_f1")
    row["mean_words"] = _mean([len(r.split()) for r in responses])
    row["empty"] = _mean([not r.strip() for r in responses])
    row["repeated"] = _mean([is_repeated(r) for r in responses])
    if q2 is not None:
        row["q2"] = _mean([s.get("q2") for s in q2])
        row["q2_no_nli"] = _mean([s.get("q2_no_nli") for s in q2])
    return {column: row.get(column) for column in COLUMNS + (Q2_COLUMNS if q2 is not None else ())}


def write_csv(table: Sequence[dict], path: Path) -> Path:
    """``sweep.csv``: one row per cell; floats to 6 decimals, missing values empty."""
    columns = list(table[0])
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in table:
            writer.writerow(["" if row[c] is None else f"{row[c]:.6f}" if isinstance(row[c], float) else row[c]
                             for c in columns])
    return path


def format_value(measure: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if measure == "bleu":
        return f"{value:.2f}"
    if measure == "mean_words":
        return f"{value:.1f}"
    return f"{value:.3f}"


def grid_of(table: Sequence[dict]) -> dict[tuple[float, float], dict]:
    """The table's rows by (alpha, top_p)."""
    return {(row["alpha"], row["top_p"]): row for row in table}


def markdown_table(table: Sequence[dict], config: SweepConfig, best: dict | None = None) -> str:
    """The paper's Table 5: alpha rows x top_p columns, each cell "faithfulness / relevance", then the baseline and best."""
    faith, relevance = config.faithfulness, config.relevance
    grid = grid_of(table)
    alphas, top_ps = [float(a) for a in dict.fromkeys(config.alpha)], [float(p) for p in dict.fromkeys(config.top_p)]
    lines = ["| alpha \\ top_p | " + " | ".join(f"{p:g}" for p in top_ps) + " |",
             "|---|" + "---|" * len(top_ps)]
    for alpha in alphas:
        cells = [f"{format_value(faith, grid[alpha, p][faith])} / {format_value(relevance, grid[alpha, p][relevance])}"
                 for p in top_ps]
        lines.append(f"| {alpha:g} | " + " | ".join(cells) + " |")
    baseline = grid[BASELINE]
    lines.append("")
    lines.append(f"cells: {faith} / {relevance}; {config.decoding} decoding, {baseline['n']} contexts; "
                 f"baseline (alpha 0, top_p 1): {format_value(faith, baseline[faith])} / "
                 f"{format_value(relevance, baseline[relevance])}")
    if best and best.get("best"):
        chosen = best["best"]
        lines.append(f"best: alpha {chosen['alpha']:g}, top_p {chosen['top_p']:g} "
                     f"({format_value(faith, chosen[faith])} / {format_value(relevance, chosen[relevance])}): "
                     f"{best['rule']}")
    return "\n".join(lines)


def choose_best(table: Sequence[dict], faithfulness: str = "pmi_faith", relevance: str = "bleu",
                tolerance: float = 1.0) -> dict:
    """The most faithful cell whose relevance is at least the baseline's minus ``tolerance``.

    Ties go to higher relevance, then to the smaller alpha and top_p (the milder change).
    Without a relevance value for the baseline (no gold responses), the bound is dropped
    and the rule says so. Returns ``{"rule", "best", "baseline", "bound", "eligible", …}``.
    """
    baseline = next(row for row in table if (row["alpha"], row["top_p"]) == BASELINE)
    base_relevance = baseline.get(relevance)
    scored = [row for row in table if row.get(faithfulness) is not None]
    if base_relevance is None:
        bound, eligible = None, scored
        rule = f"highest {faithfulness}; no {relevance} for the baseline, so no relevance bound"
    else:
        bound = base_relevance - tolerance
        eligible = [row for row in scored if row.get(relevance) is not None and row[relevance] >= bound]
        rule = (f"highest {faithfulness} among cells with {relevance} >= baseline {relevance} - {tolerance:g} "
                f"= {bound:.4g}")

    def rank(row):
        return row[faithfulness], row.get(relevance) or -math.inf, -row["alpha"], -row["top_p"]

    best = max(eligible, key=rank) if eligible else None
    return {"rule": rule, "faithfulness": faithfulness, "relevance": relevance, "tolerance": tolerance,
            "bound": bound, "best": best, "baseline": baseline,
            "eligible": [f"a{row['alpha']:g}_p{row['top_p']:g}" for row in eligible]}
