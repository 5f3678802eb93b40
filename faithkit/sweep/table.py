"""One row of measures per cell, with intervals and paired tests, the tables that show them, and the rule that picks
the operating point.

Every measure is a :class:`~faithkit.metrics.registry.Measure` of the metric registry: its
per-response values (in context order) become a matrix of sufficient statistics
(:mod:`faithkit.metrics.corpus`), whose sum gives the corpus value, whose bootstrap gives
the 95% interval, and whose pairing with the baseline's on the same contexts gives the
paired permutation test (:mod:`faithkit.stats`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..stats import bootstrap_interval, paired_permutation_test
from ..metrics.corpus import AGGREGATES
from ..metrics.registry import MEASURES, Measure
from ..decoding import Cell, decoded_by
from ..decoding.base import parameter_text
from ..files import replacing
from ..report import markdown_table
from .config import ALWAYS, PARAMETER_COLUMNS, SweepConfig

SEED = 0
"""Seed of every interval and test: a rerun reports the same numbers."""


def active_measures(config: SweepConfig) -> list[tuple[str, Measure]]:
    """``(metric, measure)`` of the sweep's metrics (and the response form's), in registry order."""
    names = (*config.metrics, *ALWAYS)
    return [(spec.name, measure) for spec, measure in MEASURES.values() if spec.name in names]


def statistics(
    measure: Measure, rows: Sequence[dict], responses: Sequence[str], references: Sequence[str] | None
) -> np.ndarray | None:
    """The (contexts x k) sufficient statistics of one cell's measure; None when it cannot be computed."""
    values = [row.get(measure.key) if row else None for row in rows]
    return AGGREGATES[measure.aggregate].statistics(values, responses, references)


def cell_row(config: SweepConfig, cell: Cell, parameters: Sequence[str], measured: dict, baseline: dict) -> dict:
    """The row of one cell: its name, strategy, search and parameters, then per measure its value, interval and
    paired p-value against the baseline (``measured``/``baseline``: measure name -> statistics or None), then the
    cell whose decode it shares (``decodes_as``, None for its own)."""
    values = cell.strategy.parameters()
    row = {
        "cell": cell.label,
        "strategy": cell.strategy.name,
        "decoding": cell.search,
        **{PARAMETER_COLUMNS.get(key, key): values.get(key) for key in parameters},
        "n": None,
    }
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
        row.update(
            {
                measure.name: value,
                f"{measure.name}_ci_low": low,
                f"{measure.name}_ci_high": high,
                f"{measure.name}_p": p,
            }
        )
    row["decodes_as"] = decoded_by(cell).label if decoded_by(cell) != cell else None
    return row


def write_csv(table: Sequence[dict], path: Path) -> Path:
    """``sweep.csv``: one row per cell; floats to 6 decimals, missing values empty."""
    columns = list(table[0])
    with replacing(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in table:
            writer.writerow(
                ["" if row[c] is None else f"{row[c]:.6f}" if isinstance(row[c], float) else row[c] for c in columns]
            )
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
    values = [f"{key}={parameter_text(row[key])}" for key in parameters if row.get(key) is not None]
    return " ".join([row["strategy"], row["decoding"], *values])


def key_measures(config: SweepConfig) -> list[str]:
    """The measures a reader weighs a cell by, each shown with its p against the baseline and a significance mark:
    the faithfulness, relevance and fluency measures (the ones that are set)."""
    return list(dict.fromkeys(m for m in (config.faithfulness_measure, config.relevance, config.fluency_measure) if m))


def significance_mark(row: dict, baseline: dict, measure: str, level: float) -> str:
    """``▲`` if the cell's ``measure`` is significantly higher than the baseline's (paired p < ``level``), ``▼``
    if significantly lower, else empty."""
    p, value, reference = row.get(f"{measure}_p"), row.get(measure), baseline.get(measure)
    if p is None or value is None or reference is None or p >= level or value == reference:
        return ""
    return "▲" if value > reference else "▼"


def format_tested(row: dict, baseline: dict, measure: str, level: float) -> str:
    """``value [low, high] p=0.002 ▲``: the interval, the paired p against the baseline and the mark."""
    p = row.get(f"{measure}_p")
    shown_p = p is not None and row["cell"] != baseline["cell"]
    tested = format_interval(row, measure) + (f" p={format_p(p)}" if shown_p else "")
    mark = significance_mark(row, baseline, measure, level)
    return f"{tested} {mark}" if mark else tested


def trade_offs(chosen: dict, baseline: dict, config: SweepConfig) -> list[str]:
    """Each measure on which ``chosen`` is significantly worse than the baseline: ``fluency -0.59 (p = 0.007)``."""
    worse = []
    for _, measure in active_measures(config):
        mark = significance_mark(chosen, baseline, measure.name, config.significance)
        if measure.higher_is_better is not None and mark == ("▼" if measure.higher_is_better else "▲"):
            difference = chosen[measure.name] - baseline[measure.name]
            worse.append(f"{measure.name} {difference:+.3g} (p = {format_p(chosen[f'{measure.name}_p'])})")
    return worse


def folded_rows(table: Sequence[dict]) -> dict[str, list[dict]]:
    """The rows shown, by cell: each with the rows that decode as it (``= plain``); a cell whose decode is not a row
    of its own (``plain_beam`` when the baseline is greedy) stays a row."""
    names = {row["cell"] for row in table}
    shown: dict[str, list[dict]] = {row["cell"]: [] for row in table if row["decodes_as"] not in names}
    for row in table:
        if row["decodes_as"] in names:
            shown[row["decodes_as"]].append(row)
    return shown


def shown_label(row: dict, folded: Sequence[dict], parameters: Sequence[str]) -> str:
    """The label of a shown row, with the cells folded into it: ``plain greedy (= pmi greedy alpha=0 top_p=0.6)``."""
    same = "; ".join(label(r, parameters) for r in folded)
    return f"{label(row, parameters)} (= {same})" if folded else label(row, parameters)


def status(row: dict, best: dict | None, folded: Sequence[dict] = ()) -> str:
    """``best`` (the row, or a cell ``folded`` into it, is the pick), ``excluded: <reason>`` (it fails a bound of the
    rule) or empty."""
    if not best:
        return ""
    if best.get("best") and best["best"]["cell"] in (row["cell"], *(other["cell"] for other in folded)):
        return "best"
    reason = exclusion(row, best["faithfulness"], best["bounds"])
    return f"excluded: {reason}" if reason else ""


def sweep_markdown(table: Sequence[dict], config: SweepConfig, best: dict | None = None) -> str:
    """The sweep's tables as markdown: every cell with each measure's value and 95% interval (the key measures with p
    against the baseline and a mark), cells that decode alike on one line, and whether the rule chose or excluded
    it; the PMI-DECODE grid in the paper's Table-5 layout (alpha rows x top_p columns, "faithfulness / relevance")
    when it has one; then the baseline, the pick and its trade-offs."""
    measures = [measure.name for _, measure in active_measures(config)]
    keys, parameters, baseline, level = key_measures(config), parameter_names(table), table[0], config.significance
    rows = {row["cell"]: row for row in table}
    shown = [
        [
            shown_label(rows[cell], folded, parameters),
            *(
                format_tested(rows[cell], baseline, m, level) if m in keys else format_interval(rows[cell], m)
                for m in measures
            ),
            status(rows[cell], best, folded),
        ]
        for cell, folded in folded_rows(table).items()
    ]
    lines = [markdown_table(["cell", *measures, "choice"], shown)]
    faith, relevance = config.faithfulness_measure, config.relevance
    assert faith is not None  # SweepConfig.validate requires a faithfulness measure
    grid = {(row["decoding"], row.get("alpha"), row.get("top_p")): row for row in table if row["strategy"] == "pmi"}
    alphas = sorted({alpha for search, alpha, _ in grid if search == config.decoding and alpha is not None})
    top_ps = sorted({top_p for search, _, top_p in grid if search == config.decoding and top_p is not None})
    if len(alphas) > 1 and len(top_ps) > 1:
        cells = [[grid.get((config.decoding, alpha, p)) for p in top_ps] for alpha in alphas]
        pairs = [
            [
                f"{alpha:g}",
                *(
                    f"{format_value(faith, c[faith])} / {format_value(relevance, c[relevance])}" if c else "—"
                    for c in row
                ),
            ]
            for alpha, row in zip(alphas, cells)
        ]
        header = ["alpha \\ top_p", *(f"{p:g}" for p in top_ps)]
        lines += ["", f"PMI-DECODE, {config.decoding}: {faith} / {relevance}", "", markdown_table(header, pairs)]
    lines.append("")
    lines.append(
        f"intervals: 95% bootstrap over {baseline['n']} contexts; p: paired permutation test against the "
        f"baseline {label(baseline, parameters)} ({format_value(faith, baseline[faith])} / "
        f"{format_value(relevance, baseline[relevance])}); ▲/▼: significantly higher/lower at p < {level:g}"
    )
    if best:
        lines.append(best_sentence(best, config, parameters))
    return "\n".join(lines)


def best_sentence(best: dict, config: SweepConfig, parameters: Sequence[str]) -> str:
    """The pick, whether it is significantly more faithful than the baseline, its trade-offs, and the rule."""
    if not best.get("best"):
        return f"best: none: {best['rule']}"
    chosen, baseline, faith = best["best"], best["baseline"], config.faithfulness_measure
    assert faith is not None  # SweepConfig.validate requires a faithfulness measure
    verdict = "significantly" if best["significant"] else "not significantly"
    worse = trade_offs(chosen, baseline, config)
    costs = (
        ""
        if chosen["cell"] == baseline["cell"]
        else ("; trade-offs: significantly worse than the baseline on " + ", ".join(worse))
        if worse
        else "; trade-offs: none (no measure significantly worse than the baseline)"
    )
    return (
        f"best: {label(chosen, parameters)} ({format_interval(chosen, faith)} / "
        f"{format_value(config.relevance, chosen[config.relevance])}), {verdict} more faithful than the baseline "
        f"(p = {format_p(chosen.get(f'{faith}_p'))}){costs}: {best['rule']}"
    )


def format_p(value) -> str:
    """A p-value to three significant digits (``—`` when none)."""
    return "—" if value is None else f"{value:.3g}"


def parameter_names(table: Sequence[dict]) -> list[str]:
    """The strategy-parameter columns of a table (between ``decoding`` and ``n``)."""
    columns = list(table[0])
    return columns[columns.index("decoding") + 1 : columns.index("n")]


def best_by_strategy(table: Sequence[dict], **rule) -> dict[str, dict]:
    """Each strategy's own pick (plain decoding aside), by :func:`choose_best`'s ``rule`` among its cells and the
    baseline; a strategy none of whose cells meets the bounds gets its most faithful cell, marked
    ``"within_bounds": false``. What the Table-4 protocol decodes on the test rows (``chosen`` of a sweep config)."""
    picks = {}
    for name in dict.fromkeys(row["strategy"] for row in table if row["strategy"] != "plain"):
        own = [row for row in table if row["strategy"] == name]
        pick = choose_best([table[0], *own], **rule)["best"]
        within = pick is not None and pick is not table[0]
        if not within:
            scored = [row for row in own if row.get(rule.get("faithfulness", "pmi_faith")) is not None]
            pick = max(scored, key=lambda row: row[rule.get("faithfulness", "pmi_faith")]) if scored else own[0]
        picks[name] = {**pick, "within_bounds": within}
    return picks


def choose_best(
    table: Sequence[dict],
    faithfulness: str = "pmi_faith",
    relevance: str = SweepConfig.relevance,
    tolerance: float = SweepConfig.tolerance,
    fluency: str | None = SweepConfig.fluency,
    fluency_tolerance: float = SweepConfig.fluency_tolerance,
    significance: float = SweepConfig.significance,
) -> dict:
    """The most faithful cell whose relevance and fluency are at least the baseline's minus their tolerances.

    The defaults are :class:`SweepConfig`'s; ``faithfulness`` is PMI-FAITH's measure unless named (a sweep names
    its :attr:`~SweepConfig.faithfulness_measure`).

    The baseline is the table's first row. Ties go to higher relevance, then to the earlier
    cell. A bound whose measure the baseline lacks (no gold responses, no fluency measure)
    is dropped and the rule says so. ``significant`` tells whether the pick's faithfulness
    beats the baseline's with paired p < ``significance``. Returns ``{"rule", "best",
    "baseline", "significant", "eligible", …}``.
    """
    baseline = table[0]
    bounds, clauses = baseline_bounds(baseline, ((relevance, tolerance), (fluency, fluency_tolerance)))
    eligible = [row for row in table if exclusion(row, faithfulness, bounds) is None]
    rule = (
        f"highest {faithfulness} among cells with " + " and ".join(clauses)
        if bounds
        else f"highest {faithfulness}; " + "; ".join(clauses)
    )
    position = {row["cell"]: index for index, row in enumerate(table)}
    best = (
        max(eligible, key=lambda row: (row[faithfulness], row.get(relevance) or -math.inf, -position[row["cell"]]))
        if eligible
        else None
    )
    p = best.get(f"{faithfulness}_p") if best else None
    significant = bool(
        best is not None
        and best is not baseline
        and p is not None
        and p < significance
        and best[faithfulness] > baseline[faithfulness]
    )
    return {
        "rule": rule,
        "faithfulness": faithfulness,
        "relevance": relevance,
        "tolerance": tolerance,
        "fluency": fluency,
        "fluency_tolerance": fluency_tolerance,
        "bounds": bounds,
        "significance": significance,
        "significant": significant,
        "p": p,
        "best": best,
        "baseline": baseline,
        "eligible": [row["cell"] for row in eligible],
    }


def baseline_bounds(baseline: dict, tolerances: Sequence[tuple[str | None, float]]) -> tuple[dict, list[str]]:
    """``(bounds, clauses)``: each ``(measure, tolerance)``'s lower bound, the baseline's value minus the tolerance
    (a measure None or that the baseline lacks gets none), and the rule's clause saying so."""
    clauses, bounds = [], {}
    for measure, slack in tolerances:
        if measure is None:
            continue
        if baseline.get(measure) is None:
            clauses.append(f"no {measure} for the baseline, so no {measure} bound")
            continue
        bounds[measure] = baseline[measure] - slack
        clauses.append(f"{measure} >= baseline {measure} - {slack:g} = {bounds[measure]:.4g}")
    return bounds, clauses


def exclusion(row: dict, faithfulness: str, bounds: dict) -> str | None:
    """Why :func:`choose_best`'s rule leaves the cell out (``fluency -5.31 < bound -3.1``), or None if it may pick it."""
    if row.get(faithfulness) is None:
        return f"no {faithfulness}"
    for measure, bound in bounds.items():
        if row.get(measure) is None:
            return f"no {measure}"
        if row[measure] < bound:
            return f"{measure} {format_value(measure, row[measure])} < bound {format_value(measure, bound)}"
    return None
