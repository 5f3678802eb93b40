"""Heatmaps of each sweep measure over the PMI-DECODE alpha x top_p grid (matplotlib's Agg backend: no display)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported
import matplotlib.pyplot as plt
import numpy as np

from ..data.files import save_figure
from .config import SweepConfig
from .table import active_measures, format_value


def heatmaps(table: Sequence[dict], config: SweepConfig, folder: Path, best: dict | None = None) -> list[Path]:
    """One PNG per measure that has values (``<folder>/<measure>.png``) over the PMI-DECODE cells of the sweep's
    search; the best cell is framed in red. None without PMI-DECODE cells.

    Rows are alpha (top to bottom, as in the paper's Table 5), columns top_p; each square
    shows its value; titles come from the metric registry. Bright (yellow) is better: the map
    is reversed for measures where lower is better (the shares of empty and repeated responses).
    """
    grid = {
        (row["alpha"], row["top_p"]): row
        for row in table
        if row["strategy"] == "pmi" and row["search"] == config.search
    }
    if not grid:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    alphas, top_ps = sorted({a for a, _ in grid}), sorted({p for _, p in grid})
    chosen = (best or {}).get("best") or {}
    paths = []
    for _, measure in active_measures(config):
        values = np.array([[_value(grid.get((a, p), {}).get(measure.name)) for p in top_ps] for a in alphas])
        if np.isnan(values).all():
            continue
        figure = _heatmap(values, grid, (alphas, top_ps), measure, chosen.get("cell"))
        figure.axes[0].set_title(f"{measure.title}, PMI-DECODE {config.search}")
        figure.tight_layout()
        path = folder / f"{measure.name}.png"
        save_figure(figure, path)
        plt.close(figure)
        paths.append(path)
    return paths


def _heatmap(values, grid: dict, axes_values: tuple, measure, chosen_cell):
    """One measure's figure: each square coloured and labelled with its value, the chosen cell framed in red."""
    alphas, top_ps = axes_values
    lower = measure.higher_is_better is False
    figure, axes = plt.subplots(figsize=(1.1 * len(top_ps) + 2.4, 0.7 * len(alphas) + 1.6), dpi=120)
    image = axes.imshow(values, cmap="viridis_r" if lower else "viridis", aspect="auto")
    middle = np.nanmin(values) + (np.nanmax(values) - np.nanmin(values)) / 2
    for row, alpha in enumerate(alphas):
        for column, top_p in enumerate(top_ps):
            value = values[row, column]
            dark = (value > middle) == lower
            axes.text(
                column,
                row,
                format_value(measure.name, None if np.isnan(value) else value),
                ha="center",
                va="center",
                fontsize=9,
                color="white" if dark else "black",
            )
            if grid.get((alpha, top_p), {}).get("cell") == chosen_cell:
                axes.add_patch(
                    plt.Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5)
                )
    axes.set_xticks(range(len(top_ps)), labels=[f"{p:g}" for p in top_ps])
    axes.set_yticks(range(len(alphas)), labels=[f"{a:g}" for a in alphas])
    axes.set(xlabel="top_p", ylabel="alpha")
    figure.colorbar(image, ax=axes, shrink=0.85)
    return figure


def _value(value) -> float:
    return float("nan") if value is None else float(value)
