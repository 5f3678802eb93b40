"""Heatmaps of each sweep measure over the alpha x top_p grid (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported
import matplotlib.pyplot as plt
import numpy as np

from .config import SweepConfig
from .table import format_value, grid_of

MEASURE_TITLES = {
    "pmi_faith": "PMI-FAITH (judge)", "knowledge_precision": "knowledge precision", "bleu": "BLEU vs gold",
    "token_f1": "token F1 vs gold", "mean_words": "mean words", "empty": "share empty",
    "repeated": "share repeated", "q2": "Q²", "q2_no_nli": "Q² without NLI",
}
LOWER_IS_BETTER = ("empty", "repeated")


def heatmaps(table: Sequence[dict], config: SweepConfig, folder: Path, best: dict | None = None) -> list[Path]:
    """One PNG per measure that has values (``<folder>/<measure>.png``); the best cell is framed in red.

    Rows are alpha (top to bottom, as in the paper's Table 5), columns top_p; each square
    shows its value. Bright (yellow) is high, except for the shares of empty and repeated
    responses, whose map is reversed so that bright means few of them.
    """
    folder.mkdir(parents=True, exist_ok=True)
    grid = grid_of(table)
    alphas, top_ps = [float(a) for a in dict.fromkeys(config.alpha)], [float(p) for p in dict.fromkeys(config.top_p)]
    chosen = best.get("best") if best else None
    paths = []
    for measure, title in MEASURE_TITLES.items():
        values = np.array([[_value(grid[a, p].get(measure)) for p in top_ps] for a in alphas], dtype=float)
        if np.isnan(values).all():
            continue
        figure, axes = plt.subplots(figsize=(1.1 * len(top_ps) + 2.4, 0.7 * len(alphas) + 1.6), dpi=120)
        image = axes.imshow(values, cmap="viridis_r" if measure in LOWER_IS_BETTER else "viridis", aspect="auto")
        middle = np.nanmin(values) + (np.nanmax(values) - np.nanmin(values)) / 2
        for row, alpha in enumerate(alphas):
            for column, top_p in enumerate(top_ps):
                value = values[row, column]
                dark = (value > middle) == (measure in LOWER_IS_BETTER)
                axes.text(column, row, format_value(measure, None if np.isnan(value) else value), ha="center",
                          va="center", fontsize=9, color="white" if dark else "black")
                if chosen and (chosen["alpha"], chosen["top_p"]) == (alpha, top_p):
                    axes.add_patch(plt.Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red",
                                                 linewidth=2.5))
        axes.set_xticks(range(len(top_ps)), labels=[f"{p:g}" for p in top_ps])
        axes.set_yticks(range(len(alphas)), labels=[f"{a:g}" for a in alphas])
        axes.set(xlabel="top_p", ylabel="alpha", title=f"{title}, {config.decoding}")
        figure.colorbar(image, ax=axes, shrink=0.85)
        figure.tight_layout()
        path = folder / f"{measure}.png"
        figure.savefig(path)
        plt.close(figure)
        paths.append(path)
    return paths


def _value(value) -> float:
    return float("nan") if value is None else float(value)
