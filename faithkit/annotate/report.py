"""The report of an annotation task: shares, wins, agreement and metric correlation from the annotators' exports.

:func:`read_annotations` (:mod:`.exports`) reads the annotators' exports; :func:`summarize` computes, per
dimension:

- each system's shares of Agree / Neutral / Disagree over all ratings;
- win rates: over (annotator, item) pairs, the share where system a was rated higher than
  b, the ties, and the share where b was; a paired sign test over items (each item's mean
  rating difference across annotators; items without a difference are left out; two-sided
  binomial p);
- inter-annotator agreement over the rated responses (item x system): Krippendorff's alpha
  (ordinal) and Fleiss' kappa;

and the Spearman correlation of each response's human faithfulness (mean over annotators,
Agree 2, Neutral 1, Disagree 0) with its automatic scores in the key (PMI-FAITH, Q²,
knowledge precision). The intervals of shares and win rates are 95% percentile bootstraps
over items (an item is resampled with all its ratings and both responses); those of the
correlations Fisher z intervals with Bonett and Wright's variance, which take the rated
responses as independent pairs. :func:`write_report` writes
``report.csv`` (one statistic per line) and ``report.png`` into the task folder and returns
the markdown.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from ..data.files import replacing, save_figure
from ..report import markdown_table
from .agreement import agreement
from .exports import Annotations
from .task import ANSWERS, DIMENSIONS, SYSTEMS

__all__ = ["MEASURES", "csv_rows", "markdown", "sign_test", "summarize", "write_report"]

MEASURES = {
    "pmi_faith": "PMI-FAITH",
    "q2": "Q²",
    "faithkit_checker": "faithkit-checker",
    "knowledge_precision": "knowledge precision",
}


def _answer_counts(ratings: np.ndarray) -> np.ndarray:
    """Per item, how many annotators gave each answer: ``ratings[annotator, item]`` -> (items, answers)."""
    return np.stack([(ratings == index).sum(axis=0) for index in range(len(ANSWERS))], axis=1)


def _outcome_counts(levels: np.ndarray) -> np.ndarray:
    """Per item, how many annotators rated a higher, the same, lower than b: ``levels[annotator, item, system]``."""
    difference = levels[:, :, 0] - levels[:, :, 1]
    return np.stack([(difference > 0).sum(axis=0), (difference == 0).sum(axis=0), (difference < 0).sum(axis=0)], axis=1)


def _shares(counts: np.ndarray, names: tuple[str, ...], resamples: int, seed: int) -> dict:
    """Each column's share of the counts (items x columns), with its bootstrap interval over items."""
    from ..stats import bootstrap_interval

    row: dict[str, float | tuple[float, float]] = {}
    for column, name in enumerate(names):

        def share(sums, column=column):
            return sums[column] / sums.sum()

        row[name] = float(share(counts.sum(axis=0)))
        row[f"{name}_ci"] = bootstrap_interval(counts, share, resamples=resamples, seed=seed)
    return row


def sign_test(levels: np.ndarray) -> dict:
    """Paired sign test over items of ``levels[annotator, item, system]``: each item's mean difference a - b."""
    from scipy import stats as scipy_stats

    difference = (levels[:, :, 0] - levels[:, :, 1]).mean(axis=0)
    better, worse = int((difference > 0).sum()), int((difference < 0).sum())
    p = scipy_stats.binomtest(better, better + worse, 0.5).pvalue if better + worse else 1.0
    return {"a_better": better, "b_better": worse, "tied": len(difference) - better - worse, "p": float(p)}


def summarize(annotations: Annotations, resamples: int = 1000, seed: int = 0) -> dict:
    """Every statistic of the report (see the module docstring), intervals from ``resamples`` bootstrap draws."""
    ratings = annotations.ratings
    levels = len(ANSWERS) - 1 - ratings  # higher is better (agree 2, neutral 1, disagree 0): for wins and correlations
    return {
        "task": annotations.key["task"],
        "systems": annotations.systems,
        "items": ratings.shape[1],
        "annotators": _annotator_counts(annotations),
        "shares": _answer_shares(ratings, resamples, seed),
        "wins": _wins(levels, resamples, seed),
        "agreement": _agreements(ratings),
        "correlations": _correlations(annotations, levels),
        "bootstrap": {"resamples": resamples, "seed": seed},
    }


def _answer_shares(ratings: np.ndarray, resamples: int, seed: int) -> list[dict]:
    """Per dimension and system: the share of each answer, with its interval."""
    return [
        {
            "dimension": dimension,
            "system": system,
            **_shares(_answer_counts(ratings[:, :, index, column]), ANSWERS, resamples, seed),
        }
        for column, dimension in enumerate(DIMENSIONS)
        for index, system in enumerate(SYSTEMS)
    ]


def _wins(levels: np.ndarray, resamples: int, seed: int) -> list[dict]:
    """Per dimension: the shares of A wins, ties and B wins, with their intervals, and the sign test."""
    return [
        {
            "dimension": dimension,
            **_shares(_outcome_counts(levels[:, :, :, column]), ("a_wins", "ties", "b_wins"), resamples, seed),
            "sign_test": sign_test(levels[:, :, :, column]),
        }
        for column, dimension in enumerate(DIMENSIONS)
    ]


def _agreements(ratings: np.ndarray) -> list[dict]:
    """Per dimension: the annotators' agreement over every (item, system) unit (NaN with one annotator)."""
    agreements = []
    for column, dimension in enumerate(DIMENSIONS):
        units = ratings[:, :, :, column].reshape(len(ratings), -1).T  # (item, system) x annotator
        agreements.append(
            {
                "dimension": dimension,
                **(
                    agreement(units, len(ANSWERS))
                    if len(ratings) > 1
                    else {"krippendorff_alpha": math.nan, "fleiss_kappa": math.nan}
                ),
            }
        )
    return agreements


def _correlations(annotations: Annotations, levels: np.ndarray) -> list[dict]:
    """Per metric measure the key holds: its Spearman correlation with the mean human faithfulness level."""
    from ..stats import correlation_interval, spearman

    human = levels[:, :, :, list(DIMENSIONS).index("faithfulness")].mean(axis=0)  # item x system
    correlations = []
    for measure in MEASURES:
        metric = np.array(
            [
                [entry["scores"].get(system, {}).get(measure, math.nan) for system in SYSTEMS]
                for entry in annotations.key["items"]
            ],
            dtype=float,
        ).ravel()
        known = np.isfinite(metric)
        if known.any():
            r = spearman(metric[known], human.ravel()[known]) if known.sum() >= 2 else math.nan
            correlations.append(
                {
                    "measure": measure,
                    "responses": int(known.sum()),
                    "spearman": r,
                    "spearman_ci": correlation_interval(r, int(known.sum())),
                }
            )
    return correlations


def _annotator_counts(annotations: Annotations) -> list[dict]:
    """Per annotator: the file, the items, and how often each answer was given per dimension."""
    ratings = annotations.ratings
    return [
        {
            "annotator": name,
            "file": str(path),
            "items": ratings.shape[1],
            **{
                dimension: [int(c) for c in np.bincount(ratings[number, :, :, column].ravel(), minlength=len(ANSWERS))]
                for column, dimension in enumerate(DIMENSIONS)
            },
        }
        for number, (name, path) in enumerate(zip(annotations.annotators, annotations.files))
    ]


def _number(value: float, digits: int = 3) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _with_interval(value: float, ci: tuple[float, float]) -> str:
    return f"{_number(value)} [{_number(ci[0])}, {_number(ci[1])}]"


def markdown(summary: dict) -> str:
    """The report as markdown tables: answer shares, wins, agreement, annotators and, when the key holds metric
    scores, their correlation with the human faithfulness judgements."""
    names = summary["systems"]
    sections = [
        f"## Human evaluation: a = {names['a']}, b = {names['b']}",
        f"{summary['items']} items, {len(summary['annotators'])} annotators; intervals: 95% bootstrap over items "
        f"({summary['bootstrap']['resamples']} draws); Spearman intervals: Fisher z (Bonett-Wright).",
        _shares_table(summary),
        _wins_table(summary),
        _agreement_section(summary),
        _annotators_table(summary),
    ]
    if summary["correlations"]:
        sections.append(
            markdown_table(
                ["human faithfulness vs", "responses", "Spearman [95%]"],
                [
                    [MEASURES[row["measure"]], row["responses"], _with_interval(row["spearman"], row["spearman_ci"])]
                    for row in summary["correlations"]
                ],
            )
        )
    return "\n\n".join(sections)


def _shares_table(summary: dict) -> str:
    names = summary["systems"]
    return markdown_table(
        ["dimension", "system", "Agree", "Neutral", "Disagree"],
        [
            [row["dimension"], names[row["system"]], *(_with_interval(row[a], row[f"{a}_ci"]) for a in ANSWERS)]
            for row in summary["shares"]
        ],
    )


def _wins_table(summary: dict) -> str:
    names = summary["systems"]
    header = [
        "dimension",
        f"{names['a']} wins",
        "tie",
        f"{names['b']} wins",
        f"sign test over items ({names['a']} better / worse / tied)",
    ]
    rows = []
    for row in summary["wins"]:
        test = row["sign_test"]
        rows.append(
            [
                row["dimension"],
                *(_with_interval(row[o], row[f"{o}_ci"]) for o in ("a_wins", "ties", "b_wins")),
                f"{test['a_better']} / {test['b_better']} / {test['tied']}, p = {test['p']:.3g}",
            ]
        )
    return markdown_table(header, rows)


def _agreement_section(summary: dict) -> str:
    """The agreement table, or with one annotator why there is none."""
    if len(summary["annotators"]) < 2:
        return (
            "Agreement (Krippendorff's alpha, Fleiss' kappa) is not shown: it compares annotators, and "
            "there is one; give two or more annotators' exports to measure it."
        )
    return markdown_table(
        ["dimension", "Krippendorff's alpha (ordinal)", "Fleiss' kappa"],
        [
            [row["dimension"], _number(row["krippendorff_alpha"]), _number(row["fleiss_kappa"])]
            for row in summary["agreement"]
        ],
    )


def _annotators_table(summary: dict) -> str:
    return markdown_table(
        ["annotator", "file", "items", *(f"{d} A/N/D" for d in DIMENSIONS)],
        [
            [row["annotator"], row["file"], row["items"], *("/".join(map(str, row[d])) for d in DIMENSIONS)]
            for row in summary["annotators"]
        ],
    )


def csv_rows(summary: dict) -> list[dict]:
    """One line per statistic: section, dimension, system, statistic, value, ci_low, ci_high."""
    names = summary["systems"]
    rows = []

    def add(section, dimension, system, statistic, value, ci=(None, None)):
        rows.append(
            {
                "section": section,
                "dimension": dimension,
                "system": system,
                "statistic": statistic,
                "value": value,
                "ci_low": ci[0],
                "ci_high": ci[1],
            }
        )

    for row in summary["shares"]:
        for answer in ANSWERS:
            add("shares", row["dimension"], names[row["system"]], answer, row[answer], row[f"{answer}_ci"])
    for row in summary["wins"]:
        for outcome, system in (("a_wins", names["a"]), ("ties", ""), ("b_wins", names["b"])):
            add(
                "wins",
                row["dimension"],
                system,
                "win_rate" if system else "tie_rate",
                row[outcome],
                row[f"{outcome}_ci"],
            )
        add("wins", row["dimension"], "", "sign_test_p", row["sign_test"]["p"])
    for row in summary["agreement"]:
        add("agreement", row["dimension"], "", "krippendorff_alpha_ordinal", row["krippendorff_alpha"])
        add("agreement", row["dimension"], "", "fleiss_kappa", row["fleiss_kappa"])
    for row in summary["correlations"]:
        add("correlation", "faithfulness", "", f"spearman_{row['measure']}", row["spearman"], row["spearman_ci"])
    for row in summary["annotators"]:
        for dimension in DIMENSIONS:
            for answer, count in zip(ANSWERS, row[dimension]):
                add("annotators", dimension, row["annotator"], answer, count)
    return rows


def write_report(task: str | Path, summary: dict) -> str:
    """Write ``report.csv`` and ``report.png`` into the task folder; return the markdown."""
    task = Path(task)
    with replacing(task / "report.csv", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["section", "dimension", "system", "statistic", "value", "ci_low", "ci_high"]
        )
        writer.writeheader()
        for row in csv_rows(summary):
            writer.writerow(
                {
                    k: ""
                    if v is None or (isinstance(v, float) and math.isnan(v))
                    else f"{v:.6f}"
                    if isinstance(v, float)
                    else v
                    for k, v in row.items()
                }
            )
    bar_chart(summary, task / "report.png")
    return markdown(summary)


def bar_chart(summary: dict, path: Path) -> Path:
    """One panel per dimension: each system's Agree / Neutral / Disagree shares stacked, the Agree interval marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"agree": "#1e7a46", "neutral": "#9aa0ab", "disagree": "#b3261e"}
    names = summary["systems"]
    figure, axes = plt.subplots(len(DIMENSIONS), 1, figsize=(7, 1.5 + 1.2 * len(DIMENSIONS)), dpi=120, sharex=True)
    for ax, dimension in zip(np.atleast_1d(axes), DIMENSIONS):
        rows = [row for row in summary["shares"] if row["dimension"] == dimension]
        labels = [names[row["system"]] for row in rows]
        left = np.zeros(len(rows))
        for answer in ANSWERS:
            widths = np.array([row[answer] for row in rows])
            ax.barh(labels, widths, left=left, color=colours[answer], label=answer.capitalize())
            left += widths
        agree = np.array([row["agree"] for row in rows])
        ci = np.array([row["agree_ci"] for row in rows], dtype=float)
        ax.errorbar(agree, labels, xerr=[agree - ci[:, 0], ci[:, 1] - agree], fmt="none", ecolor="black", capsize=3)
        ax.set_title(dimension, loc="left", fontsize=10)
        ax.set_xlim(0, 1)
        ax.invert_yaxis()
    np.atleast_1d(axes)[-1].set_xlabel("share of ratings (Agree with its 95% bootstrap interval)")
    np.atleast_1d(axes)[0].legend(loc="lower right", bbox_to_anchor=(1, 1.02), ncol=3, fontsize="small", frameon=False)
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)
    return path
