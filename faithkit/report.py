"""Readable tables on stdout: markdown, so they paste into papers' notes and issues as they are."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .metrics.registry import get_spec

MAX_TABLE_ROWS = 30


def markdown_table(header: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        if isinstance(value, float):
            return "nan" if math.isnan(value) else f"{value:.4f}"
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _shorten(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def print_score_table(records: list[dict], metrics: Sequence[str]) -> None:
    """Each row's scores (of every metric of ``metrics``) when there are few rows, else per-score summary statistics."""
    keys = [k for metric in metrics for k in get_spec(metric).score_keys if any(k in r for r in records)]
    scored = [r for r in records if "error" not in r]
    if len(records) <= MAX_TABLE_ROWS:
        rows = [
            [r["id"], *(r.get(k, "") for k in keys), _shorten(r.get("response", "")), r.get("error", "")]
            for r in records
        ]
        print(markdown_table(["id", *keys, "response", "error"], rows))
        return
    rows = []
    for key in keys:
        values = [float(r[key]) for r in scored if r.get(key) is not None]
        mean = sum(values) / len(values) if values else math.nan
        rows.append([key, len(values), mean, min(values, default=math.nan), max(values, default=math.nan)])
    print(markdown_table(["score", "rows", "mean", "min", "max"], rows))
    errors = len(records) - len(scored)
    if errors:
        print(f"\n{errors} rows have errors (see their 'error' field)")
