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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..stats import bootstrap_interval, paired_permutation_test
from ..metrics.corpus import AGGREGATES
from ..metrics.registry import MEASURES, Measure
from ..decoding import Cell, shared_decode
from ..decoding.base import parameter_text
from ..data.files import replacing
from ..report import markdown_table
from .chosen import PARAMETER_COLUMNS
from .config import ALWAYS, SweepConfig

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
        "search": cell.search,
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
    row["decodes_as"] = shared_decode(cell).label if shared_decode(cell) != cell else None
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


def format_value(measure: str, value, fewer: int = 0) -> str:
    """A measure's value to its usual decimals (BLEU 2, words 1, others 3), ``fewer`` less; ``—`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    digits = {"bleu": 2, "words": 1}.get(measure, 3)
    return f"{value:.{max(0, digits - fewer)}f}"


def format_interval(row: dict, measure: str, compact: bool = False) -> str:
    """``value [low, high]`` as the tables show it; ``compact``: the bounds to one decimal less."""
    low, high = row.get(f"{measure}_ci_low"), row.get(f"{measure}_ci_high")
    value, fewer = format_value(measure, row.get(measure)), int(compact)
    return (
        value if low is None else f"{value} [{format_value(measure, low, fewer)}, {format_value(measure, high, fewer)}]"
    )


def label(row: dict, parameters: Sequence[str]) -> str:
    """A cell as people read it: ``pmi greedy alpha=0.25 top_p=0.6``."""
    values = [f"{key}={parameter_text(row[key])}" for key in parameters if row.get(key) is not None]
    return " ".join([row["strategy"], row["search"], *values])


def significance_mark(row: dict, baseline: dict, measure: str, level: float) -> str:
    """``▲`` if the cell's ``measure`` is significantly higher than the baseline's (paired p < ``level``), ``▼``
    if significantly lower, else empty."""
    p, value, reference = row.get(f"{measure}_p"), row.get(measure), baseline.get(measure)
    if p is None or value is None or reference is None or p >= level or value == reference:
        return ""
    return "▲" if value > reference else "▼"


def format_tested(row: dict, baseline: dict, measure: str, level: float) -> str:
    """The paired p against the baseline with its mark (``0.002 ▲``), or ``baseline`` on the baseline's row."""
    if row["cell"] == baseline["cell"]:
        return "baseline"
    mark = significance_mark(row, baseline, measure, level)
    return format_p(row.get(f"{measure}_p")) + (f" {mark}" if mark else "")


def tested(measure: str) -> bool:
    """Whether a measure has a direction, so its paired p against the baseline is shown (not words per response)."""
    return MEASURES[measure][1].higher_is_better is not None


@dataclass(frozen=True)
class Shown:
    """One entry of the cell table as every output shows it: its text, the number a click in the report sorts it by
    (None: none), and the measure column it belongs to (``pmi_faith``, ``pmi_faith_p``; None: label or choice)."""

    text: str
    value: float | None = None
    column: str | None = None


def shown_columns(config: SweepConfig) -> list[tuple[str, str]]:
    """The cell table's measure columns as ``(column, measure)``: each measure (``pmi_faith``), then its p
    (``pmi_faith_p``) when it has a direction."""
    return [
        (column, measure.name)
        for _, measure in active_measures(config)
        for column in ((measure.name, f"{measure.name}_p") if tested(measure.name) else (measure.name,))
    ]


def shown_table(
    table: Sequence[dict], config: SweepConfig, best: dict | None, compact: bool = False
) -> dict[str, list[Shown]]:
    """The one cell table the sweep's stdout and report.html show (sweep.csv holds its full numbers): per shown
    row (cells that decode alike on one, see :func:`folded_rows`) its label, then per :func:`shown_columns` column
    the value with its 95% interval or the paired p against the baseline with its mark, then whether the rule chose
    or excluded it. ``compact``: the label without the folded cells, intervals to a decimal less."""
    parameters, baseline, level = parameter_names(table), table[0], config.significance
    rows = {row["cell"]: row for row in table}
    shown = {}
    for cell, folded in folded_rows(table).items():
        row = rows[cell]
        entries = [Shown(label(row, parameters) if compact else shown_label(row, folded, parameters))]
        for column, measure in shown_columns(config):
            text = (
                format_interval(row, measure, compact)
                if column == measure
                else format_tested(row, baseline, measure, level)
            )
            entries.append(Shown(text, row.get(column), column))
        entries.append(Shown(status(row, best, folded)))
        shown[cell] = entries
    return shown


MEASURES_PER_TABLE = 3
"""Measures in one printed table: more would make lines too long to read in a terminal."""


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
    """The sweep's tables as markdown: :func:`shown_table` in its compact form, :data:`MEASURES_PER_TABLE` measures
    a table (each with its 95% interval and, with a direction, its paired p against the baseline and a mark), the
    first with whether the rule chose or excluded each cell; the cells that decode alike; the PMI-DECODE grid in
    the paper's Table-5 layout when it has one; then the baseline, the pick and its trade-offs."""
    parameters, baseline = parameter_names(table), table[0]
    shown = shown_table(table, config, best, compact=True)
    lines = _measure_tables(shown, shown_columns(config))
    rows = {row["cell"]: row for row in table}
    folded = [
        f"{label(rows[cell], parameters)} = {'; '.join(label(r, parameters) for r in alike)}"
        for cell, alike in folded_rows(table).items()
        if alike
    ]
    if folded:
        lines += ["", "decoded alike, shown once: " + " | ".join(folded)]
    faith, relevance = config.faithfulness_measure, config.relevance
    assert faith is not None  # SweepConfig.validate requires a faithfulness measure
    lines += _table5_grid(table, config, faith, relevance)
    lines.append("")
    lines.append(
        f"intervals: 95% bootstrap over {baseline['n']} contexts; p: paired permutation test against the "
        f"baseline {label(baseline, parameters)} ({format_value(faith, baseline[faith])} / "
        f"{format_value(relevance, baseline[relevance])}); ▲/▼: significantly higher/lower at p < {config.significance:g}"
    )
    if config.faithfulness_note:
        lines.append(f"note: {config.faithfulness_note}")
    if best:
        lines.append(best_sentence(best, config, parameters))
    return "\n".join(lines)


def _measure_tables(shown: dict, columns: list) -> list[str]:
    """:data:`MEASURES_PER_TABLE` measures a table, one line a cell; the first with the rule's choice column."""
    measures = list(dict.fromkeys(measure for _, measure in columns))
    lines: list[str] = []
    for start in range(0, len(measures), MEASURES_PER_TABLE):
        group, first = measures[start : start + MEASURES_PER_TABLE], start == 0
        wanted = [index for index, (_, measure) in enumerate(columns) if measure in group]
        heads = [
            "cell",
            *(measure if column == measure else f"{measure} p" for column, measure in map(columns.__getitem__, wanted)),
        ]
        body = [
            [entries[0].text, *(entries[1 + i].text for i in wanted), *([entries[-1].text] if first else [])]
            for entries in shown.values()
        ]
        lines += [*([""] if lines else []), markdown_table([*heads, *(["choice"] if first else [])], body)]
    return lines


def _table5_grid(table: Sequence[dict], config: SweepConfig, faith: str, relevance: str) -> list[str]:
    """The PMI-DECODE grid in the paper's Table-5 layout (alpha rows x top_p columns, "faithfulness / relevance"),
    with a blank line and a title before it; nothing unless the grid has two values of each."""
    grid = {(row["search"], row.get("alpha"), row.get("top_p")): row for row in table if row["strategy"] == "pmi"}
    alphas = sorted({alpha for search, alpha, _ in grid if search == config.search and alpha is not None})
    top_ps = sorted({top_p for search, _, top_p in grid if search == config.search and top_p is not None})
    if len(alphas) > 1 and len(top_ps) > 1:
        cells = [[grid.get((config.search, alpha, p)) for p in top_ps] for alpha in alphas]
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
        return ["", f"PMI-DECODE, {config.search}: {faith} / {relevance}", "", markdown_table(header, pairs)]
    return []


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
    """The strategy-parameter columns of a table (between ``search`` and ``n``)."""
    columns = list(table[0])
    return columns[columns.index("search") + 1 : columns.index("n")]


def best_by_strategy(table: Sequence[dict], **rule) -> dict[str, dict]:
    """Each strategy's own pick (plain decoding aside), by :func:`choose_best`'s ``rule`` among its cells and the
    baseline; a strategy none of whose cells meets the bounds gets its most faithful cell, marked
    ``"within_bounds": false``. What the Table-4 protocol decodes on the test rows (``chosen`` of a sweep config)."""
    picks = {}
    for name in dict.fromkeys(row["strategy"] for row in table if row["strategy"] != "plain"):
        own = [row for row in table if row["strategy"] == name]
        pick = choose_best([table[0], *own], **rule)["best"]
        within = pick is not None and pick is not table[0]
        if not within:  # its most faithful cell (one without a value is never more faithful than one with)
            pick = max(own, key=lambda row: oriented(row, rule.get("faithfulness", "pmi_faith")))
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
    """The most faithful cell whose relevance and fluency are at least the baseline's minus their tolerances, each
    measure read in its registry direction (:func:`better`: one where lower is better is minimised, bounded above).

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
    best = _most_faithful(table, eligible, faithfulness, relevance)
    p = best.get(f"{faithfulness}_p") if best else None
    significant = best is not None and best is not baseline and _beats(best, baseline, faithfulness, significance)
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


def _most_faithful(table: Sequence[dict], eligible: list[dict], faithfulness: str, relevance: str) -> dict | None:
    """The eligible row of best ``faithfulness``; ties go to better relevance, then to the earlier cell."""
    rank = {r["cell"]: (oriented(r, faithfulness), oriented(r, relevance), -i) for i, r in enumerate(table)}
    return max(eligible, key=lambda row: rank[row["cell"]], default=None)


def better(measure: str) -> int:
    """+1 when a higher ``measure`` is better, -1 when a lower one is (its registry direction)."""
    return -1 if MEASURES[measure][1].higher_is_better is False else 1


def oriented(row: dict, measure: str) -> float:
    """The row's ``measure`` with higher better (:func:`better`); -inf without it."""
    return -math.inf if row.get(measure) is None else better(measure) * row[measure]


def _beats(row: dict, baseline: dict, faithfulness: str, significance: float) -> bool:
    """Whether ``row`` is more faithful than ``baseline`` with paired p below ``significance``."""
    p = row.get(f"{faithfulness}_p")
    return p is not None and p < significance and oriented(row, faithfulness) > oriented(baseline, faithfulness)


def baseline_bounds(baseline: dict, tolerances: Sequence[tuple[str | None, float]]) -> tuple[dict, list[str]]:
    """``(bounds, clauses)``: each measure's bound, the baseline's value -/+ its tolerance (+: lower is better), and
    the rule's clause saying so; a measure None or that the baseline lacks gets none."""
    clauses, bounds = [], {}
    for measure, slack in tolerances:
        if measure is None:
            continue
        if baseline.get(measure) is None:
            clauses.append(f"no {measure} for the baseline, so no {measure} bound")
            continue
        bounds[measure] = baseline[measure] - better(measure) * slack
        side = ">= baseline {} -" if better(measure) > 0 else "<= baseline {} +"
        clauses.append(f"{measure} {side.format(measure)} {slack:g} = {bounds[measure]:.4g}")
    return bounds, clauses


def exclusion(row: dict, faithfulness: str, bounds: dict) -> str | None:
    """Why :func:`choose_best`'s rule leaves the cell out (``fluency -5.31 < bound -3.1``), or None if it may pick it."""
    if row.get(faithfulness) is None:
        return f"no {faithfulness}"
    for measure, bound in bounds.items():
        if row.get(measure) is None:
            return f"no {measure}"
        if better(measure) * (row[measure] - bound) < 0:
            side = "<" if better(measure) > 0 else ">"
            return f"{measure} {format_value(measure, row[measure])} {side} bound {format_value(measure, bound)}"
    return None
