"""One row of measures per cell, with intervals and paired tests, the tables that show them, and the rule that picks
the operating point.

Every measure is a :class:`~faithkit.metrics.registry.Measure` of the metric registry: its
per-response values (in context order) become a matrix of sufficient statistics
(:mod:`faithkit.metrics.corpus`), whose sum gives the corpus value, whose bootstrap gives
the 95% interval, and whose pairing with the baseline's on the same contexts gives the
paired permutation test (:mod:`faithkit.eval.stats`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..eval.stats import bootstrap_interval, paired_permutation_test
from ..metrics.corpus import AGGREGATES
from ..metrics.registry import MEASURES, Measure
from ..decoding import Cell
from .config import ALWAYS, SweepConfig, decoded_by

SEED = 0
"""Seed of every interval and test: a rerun reports the same numbers."""


def active_measures(config: SweepConfig) -> list[tuple[str, Measure]]:
    """``(metric, measure)`` of the sweep's metrics (and the response form's), in registry order."""
    names = (*config.metrics, *ALWAYS)
    return [(spec.name, measure) for spec, measure in MEASURES.values() if spec.name in names]


def statistics(measure: Measure, rows: Sequence[dict], responses: Sequence[str],
               references: Sequence[str] | None) -> np.ndarray | None:
    """The (contexts x k) sufficient statistics of one cell's measure; None when it cannot be computed."""
    values = [row.get(measure.key) if row else None for row in rows]
    return AGGREGATES[measure.aggregate].statistics(values, responses, references)


def cell_row(config: SweepConfig, cell: Cell, parameters: Sequence[str], measured: dict, baseline: dict) -> dict:
    """The row of one cell: its name, strategy, search and parameters, then per measure its value, interval and
    paired p-value against the baseline (``measured``/``baseline``: measure name -> statistics or None), then the
    cell whose decode it shares (``decodes_as``, None for its own)."""
    values = cell.strategy.parameters()
    row = {"cell": cell.label, "strategy": cell.strategy.name, "decoding": cell.search,
           **{key: values.get(key) for key in parameters}, "n": None}
    for _, measure in active_measures(config):
        mine, theirs = measured.get(measure.name), baseline.get(measure.name)
        finish = AGGREGATES[measure.aggregate].finish
        value = low = high = p = None
        if mine is not None:
            row["n"] = len(mine)
            value = finish(mine.sum(axis=0))
            low, high = bootstrap_interval(mine, finish, resamples=config.resamples, seed=SEED)
            if theirs is not None:
                p = paired_permutation_test(mine, theirs, finish, permutations=config.resamples, seed=SEED)
        row.update({measure.name: value, f"{measure.name}_ci_low": low, f"{measure.name}_ci_high": high,
                    f"{measure.name}_p": p})
    row["decodes_as"] = decoded_by(cell).label if decoded_by(cell) != cell else None
    return row


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
    if measure == "words":
        return f"{value:.1f}"
    return f"{value:.3f}"


def format_interval(row: dict, measure: str) -> str:
    """``value [low, high]`` as the markdown table and the report show it."""
    low, high = row.get(f"{measure}_ci_low"), row.get(f"{measure}_ci_high")
    value = format_value(measure, row.get(measure))
    return value if low is None else f"{value} [{format_value(measure, low)}, {format_value(measure, high)}]"


def label(row: dict, parameters: Sequence[str]) -> str:
    """A cell as people read it: ``pmi greedy alpha=0.25 top_p=0.6``."""
    values = [f"{key}={row[key]:g}" for key in parameters if row.get(key) is not None]
    return " ".join([row["strategy"], row["decoding"], *values])


def markdown_table(table: Sequence[dict], config: SweepConfig, best: dict | None = None) -> str:
    """Every cell with each measure's value and 95% interval; the PMI-DECODE grid in the paper's Table-5 layout
    (alpha rows x top_p columns, "faithfulness / relevance") when it has one; then the baseline and the pick."""
    measures = [measure.name for _, measure in active_measures(config)]
    parameters = parameter_names(table)
    lines = ["| cell | " + " | ".join(measures) + " |", "|---|" + "---|" * len(measures)]
    for row in table:
        lines.append(f"| {label(row, parameters)} | " + " | ".join(format_interval(row, m) for m in measures) + " |")
    faith, relevance = config.faithfulness, config.relevance
    grid = {(row["decoding"], row.get("alpha"), row.get("top_p")): row for row in table if row["strategy"] == "pmi"}
    alphas = sorted({alpha for search, alpha, _ in grid if search == config.decoding and alpha is not None})
    top_ps = sorted({top_p for search, _, top_p in grid if search == config.decoding and top_p is not None})
    if len(alphas) > 1 and len(top_ps) > 1:
        lines += ["", f"PMI-DECODE, {config.decoding}: {faith} / {relevance}", "",
                  "| alpha \\ top_p | " + " | ".join(f"{p:g}" for p in top_ps) + " |", "|---|" + "---|" * len(top_ps)]
        for alpha in alphas:
            cells = [grid.get((config.decoding, alpha, p)) for p in top_ps]
            lines.append(f"| {alpha:g} | " + " | ".join(
                f"{format_value(faith, c[faith])} / {format_value(relevance, c[relevance])}" if c else "—"
                for c in cells) + " |")
    baseline = table[0]
    lines.append("")
    lines.append(f"intervals: 95% bootstrap over {baseline['n']} contexts; baseline {label(baseline, parameters)}: "
                 f"{format_value(faith, baseline[faith])} / {format_value(relevance, baseline[relevance])}")
    if best and best.get("best"):
        chosen = best["best"]
        verdict = "significantly" if best["significant"] else "not significantly"
        lines.append(f"best: {label(chosen, parameters)} ({format_interval(chosen, faith)} / "
                     f"{format_value(relevance, chosen[relevance])}), {verdict} more faithful than the baseline "
                     f"(p = {_p(chosen.get(f'{faith}_p'))}): {best['rule']}")
    elif best:
        lines.append(f"best: none: {best['rule']}")
    return "\n".join(lines)


def _p(value) -> str:
    return "—" if value is None else f"{value:.3g}"


def parameter_names(table: Sequence[dict]) -> list[str]:
    """The strategy-parameter columns of a table (between ``decoding`` and ``n``)."""
    columns = list(table[0])
    return columns[columns.index("decoding") + 1:columns.index("n")]


def choose_best(table: Sequence[dict], faithfulness: str = "pmi_faith", relevance: str = "bleu",
                tolerance: float = 1.0, fluency: str | None = None, fluency_tolerance: float = 1.0,
                significance: float = 0.05) -> dict:
    """The most faithful cell whose relevance and fluency are at least the baseline's minus their tolerances.

    The baseline is the table's first row. Ties go to higher relevance, then to the earlier
    cell. A bound whose measure the baseline lacks (no gold responses, no fluency measure)
    is dropped and the rule says so. ``significant`` tells whether the pick's faithfulness
    beats the baseline's with paired p < ``significance``. Returns ``{"rule", "best",
    "baseline", "significant", "eligible", …}``.
    """
    baseline = table[0]
    eligible = [row for row in table if row.get(faithfulness) is not None]
    clauses, bounds = [], {}
    for measure, slack in ((relevance, tolerance), (fluency, fluency_tolerance)):
        if measure is None:
            continue
        if baseline.get(measure) is None:
            clauses.append(f"no {measure} for the baseline, so no {measure} bound")
            continue
        bounds[measure] = baseline[measure] - slack
        eligible = [row for row in eligible if row.get(measure) is not None and row[measure] >= bounds[measure]]
        clauses.append(f"{measure} >= baseline {measure} - {slack:g} = {bounds[measure]:.4g}")
    rule = f"highest {faithfulness} among cells with " + " and ".join(clauses) if bounds else \
        f"highest {faithfulness}; " + "; ".join(clauses)
    position = {row["cell"]: index for index, row in enumerate(table)}
    best = max(eligible, key=lambda row: (row[faithfulness], row.get(relevance) or -math.inf,
                                          -position[row["cell"]])) if eligible else None
    p = best.get(f"{faithfulness}_p") if best else None
    significant = bool(best is not None and best is not baseline and p is not None and p < significance
                       and best[faithfulness] > baseline[faithfulness])
    return {"rule": rule, "faithfulness": faithfulness, "relevance": relevance, "tolerance": tolerance,
            "fluency": fluency, "fluency_tolerance": fluency_tolerance, "bounds": bounds,
            "significance": significance, "significant": significant, "p": p, "best": best,
            "baseline": baseline, "eligible": [row["cell"] for row in eligible]}
