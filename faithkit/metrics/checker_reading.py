"""One reading of the claim checker's three probabilities: P(faithful), higher = more faithful, with a verdict.

The checker gives P(supported), P(generic) and P(unsupported). Which of them means "faithful" depends on the data: on
generated responses a generic reply is no hallucination ("not unsupported" ranks best), on curated contradictions
every response makes a claim ("supported" ranks best). The reading combines them by a logistic regression on two
log-odds, learned on rated responses (faithful = no rater disagreed that the document supports it):

* ``not_unsupported`` = log(P(supported) + P(generic)) - log P(unsupported);
* ``supported_vs_generic`` = log P(supported) - log P(generic);

``P(faithful) = sigmoid(intercept + w1 * not_unsupported + w2 * supported_vs_generic)``, and the verdict is
``P(faithful) >= threshold`` (the threshold of best balanced accuracy on the rated data). The fit is stored next to
the adapter as ``reading.json`` (:data:`READING_FILE`), so it ships with it; ``benchmarks/checker_reading_fit.py``
writes it. An adapter without one is read as ``1 - P(unsupported)`` (weights 1 and 0, intercept 0: exactly that),
threshold 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..data import files
from ..errors import InputError
from ..data.schema import NUMBER, TEXT, ListOf, Object, read_json_file

READING_FILE = "reading.json"
FEATURES = ("not_unsupported", "supported_vs_generic")
FLOOR = 1e-7
"""Probabilities are clipped to at least this before their logs (a softmax can round one to 0)."""
SCHEMA = Object(
    {
        "features": ListOf(TEXT),
        "coefficients": ListOf(NUMBER),
        "intercept": NUMBER,
        "threshold": NUMBER,
        "fitted_on": TEXT,
    },
    optional={"figures": Object({})},
)


def features(probabilities: Sequence[float]) -> list[float]:
    """:data:`FEATURES` of one (P(supported), P(generic), P(unsupported))."""
    supported, generic, unsupported = (max(value, FLOOR) for value in probabilities)
    return [math.log(supported + generic) - math.log(unsupported), math.log(supported) - math.log(generic)]


@dataclass(frozen=True)
class Reading:
    """A fitted reading: its coefficients on :data:`FEATURES`, intercept, verdict threshold, what it was fitted on
    and the figures of the fit (AUROC, balanced accuracy, expected calibration error, …)."""

    coefficients: tuple[float, float] = (1.0, 0.0)
    intercept: float = 0.0
    threshold: float = 0.5
    fitted_on: str = "not fitted: 1 - P(unsupported)"
    figures: dict = field(default_factory=dict)

    def faithful(self, probabilities: Sequence[float]) -> float:
        """P(faithful) of one (P(supported), P(generic), P(unsupported))."""
        z = self.intercept + sum(w * x for w, x in zip(self.coefficients, features(probabilities)))
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def verdict(self, faithful: float) -> bool:
        return faithful >= self.threshold

    @classmethod
    def load(cls, folder: str | Path | None) -> Reading:
        """The reading stored in an adapter ``folder`` (``reading.json``), or the unfitted one when it has none."""
        path = Path(folder or "") / READING_FILE
        if folder is None or not path.is_file():
            return cls()
        fix = "refit it with benchmarks/checker_reading_fit.py, or delete it to read 1 - P(unsupported)"
        data = read_json_file(path, SCHEMA, fix)
        if tuple(data["features"]) != FEATURES or len(data["coefficients"]) != len(FEATURES):
            raise InputError(f"{path}: features must be {', '.join(FEATURES)}, one coefficient each; {fix}")
        return cls(
            tuple(data["coefficients"]),
            data["intercept"],
            data["threshold"],
            data["fitted_on"],
            data.get("figures", {}),
        )

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / READING_FILE
        files.write_json(path, {"features": list(FEATURES), **asdict(self)})
        return path


def fit_reading(probabilities: Sequence[Sequence[float]], faithful: Sequence[int], fitted_on: str, l2: float = 0.01):
    """The :class:`Reading` of rated responses: ``probabilities`` their checker's three, ``faithful`` 1 where no rater
    disagreed; its threshold the one of best balanced accuracy, its figures measured on the same responses."""
    import numpy as np

    from .. import stats

    x = np.array([features(row) for row in probabilities])
    y = np.asarray(faithful, dtype=int)
    coefficients, intercept = stats.fit_logistic(x, y, l2)
    unfitted = Reading(tuple(coefficients.tolist()), intercept)
    scores = np.array([unfitted.faithful(row) for row in probabilities])
    threshold = stats.best_balanced_threshold(scores, y)
    figures = {
        "responses": len(y),
        "faithful": int(y.sum()),
        "l2": l2,
        "auroc": stats.auroc(scores, y),
        "balanced_accuracy": stats.balanced_accuracy(scores, y, threshold),
        "expected_calibration_error": stats.expected_calibration_error(scores, y),
    }
    return Reading(unfitted.coefficients, intercept, threshold, fitted_on, figures)
