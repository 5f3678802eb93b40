"""PNG figures for meta-evaluation reports: ROC curves and per-class score histograms.

Drawn with matplotlib's Agg backend so they work on machines without a display (CI,
servers). Each function writes one file and returns its path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported: no display needed
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ..data.files import save_figure
from .. import stats


def roc_curves(
    named_scores: Mapping[str, Sequence[float]], labels: Sequence[int], path: str | Path, title: str | None = None
) -> Path:
    """One ROC curve per named score list, on one axes, with each AUROC in the legend."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(5.5, 5), dpi=120)
    for name, scores in named_scores.items():
        fpr, tpr, _ = stats.roc_curve(scores, labels)
        axes.plot(fpr, tpr, linewidth=1.8, label=f"{name} (AUROC {stats.auroc(scores, labels):.3f})")
    axes.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1, label="chance")
    axes.set(
        xlim=(0, 1), ylim=(0, 1.01), xlabel="false positive rate", ylabel="true positive rate", title=title or "ROC"
    )
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)
    return path


def score_histograms(
    named_scores: Mapping[str, Sequence[float]],
    labels: Sequence[int],
    path: str | Path,
    class_names: tuple[str, str] = ("negative", "positive"),
    title: str | None = None,
) -> Path:
    """For each named score, the two classes' score distributions overlaid, one panel per score.

    Shows what AUROC summarises: how far apart the classes sit and where a threshold
    would cut them.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    labels = np.asarray(labels)
    count = len(named_scores)
    figure, panels = plt.subplots(1, count, figsize=(4.2 * count, 3.6), dpi=120, squeeze=False)
    for axes, (name, scores) in zip(panels[0], named_scores.items()):
        scores = np.asarray(scores, dtype=float)
        bins = np.histogram_bin_edges(scores, bins=20)
        for value, colour in ((0, "tab:red"), (1, "tab:green")):
            axes.hist(
                scores[labels == value],
                bins=bins,
                alpha=0.55,
                color=colour,
                label=f"{class_names[value]} (n={int((labels == value).sum())})",
            )
        axes.set(title=name, xlabel="score", ylabel="responses")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.legend(fontsize="small")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)
    return path
