"""System-level correlation by bootstrap simulation (Q² paper, Honovich et al. 2021, §5 / Table 4).

A metric used to compare dialogue systems should rank a system that is inconsistent more
often below one that is inconsistent less often. Real systems are few, so the paper
simulates them: for each inconsistency proportion p in 0.05, 0.10, …, 0.25 a "system"
answers ``samples`` (350) contexts, ``round(p * samples)`` of them with an inconsistent
response and the rest with a consistent one; its score is the mean metric score of its
responses. The Spearman correlation between the system scores and the systems' true
consistency (1 - p) is computed, and the whole draw repeated ``repetitions`` (1000) times.
The paper reports the mean correlation; we also report its spread (standard deviation
and the 2.5–97.5 percentile interval the authors' script prints).

How a repetition draws responses, as in the authors' ``sys_level.py``: the ``samples``
contexts are drawn once with replacement and shared by all systems of the repetition;
each system then picks its own random set of contexts to answer inconsistently. The
paper had cross-annotated pairs (a consistent and an inconsistent response to the same
context); with ``paired=True`` position i of the two score lists is taken to be the same
context. With unpaired pools (the default, as in the Q² WoW files, whose two sets come
from different contexts) a drawn context takes its consistent response from one random
row of the consistent pool and its inconsistent response from one of the inconsistent
pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..settings.options import option

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Simulation:
    """How the systems are simulated: the settings of :func:`system_level_correlation` and the flags of
    ``faithkit meta-eval system-level``, declared once (this module imports numpy only when it computes, so a
    command's ``--help`` stays quick)."""

    samples: int = option(350, "responses per simulated system", low=1)
    repetitions: int = option(1000, "bootstrap repetitions", low=1)
    proportions: list[float] = option(
        [0.05, 0.10, 0.15, 0.20, 0.25], "inconsistency proportions, one simulated system each", nargs="+"
    )
    paired: bool = option(False, "the two score files are aligned: line i of each answers the same context")
    seed: int = option(0, "random seed; the same seed gives the same numbers")


DEFAULTS = Simulation()
PROPORTIONS = tuple(DEFAULTS.proportions)


def _pool(values: Sequence[float], name: str) -> np.ndarray:
    import numpy as np

    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty list of scores")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise ValueError(f"{name}[{bad[0]}] is {values[bad[0]]}; drop rows without a finite score first")
    return values


def simulate_system_scores(
    consistent_scores: Sequence[float],
    inconsistent_scores: Sequence[float],
    proportions: Sequence[float] = PROPORTIONS,
    samples: int = DEFAULTS.samples,
    repetitions: int = DEFAULTS.repetitions,
    seed: int = DEFAULTS.seed,
    paired: bool = DEFAULTS.paired,
) -> np.ndarray:
    """Mean metric score of each simulated system: an array of shape ``(repetitions, len(proportions))``."""
    import numpy as np

    consistent = _pool(consistent_scores, "consistent_scores")
    inconsistent = _pool(inconsistent_scores, "inconsistent_scores")
    if paired and len(consistent) != len(inconsistent):
        raise ValueError(
            f"paired=True needs one consistent and one inconsistent score per context, "
            f"got {len(consistent)} and {len(inconsistent)}"
        )
    if samples < 1 or repetitions < 1:
        raise ValueError(f"samples and repetitions must be positive, got {samples} and {repetitions}")
    if any(not 0 <= p <= 1 for p in proportions):
        raise ValueError(f"inconsistency proportions must lie in [0, 1], got {list(proportions)}")

    rng = np.random.default_rng(seed)
    system_scores = np.empty((repetitions, len(proportions)))
    for repetition in range(repetitions):
        contexts = rng.integers(len(consistent), size=samples)
        consistent_draw = consistent[contexts]
        inconsistent_draw = inconsistent[contexts if paired else rng.integers(len(inconsistent), size=samples)]
        for column, proportion in enumerate(proportions):
            chosen = np.zeros(samples, dtype=bool)
            chosen[rng.choice(samples, size=round(proportion * samples), replace=False)] = True
            system_scores[repetition, column] = np.where(chosen, inconsistent_draw, consistent_draw).mean()
    return system_scores


def system_level_correlation(
    consistent_scores: Sequence[float],
    inconsistent_scores: Sequence[float],
    proportions: Sequence[float] = PROPORTIONS,
    samples: int = DEFAULTS.samples,
    repetitions: int = DEFAULTS.repetitions,
    seed: int = DEFAULTS.seed,
    paired: bool = DEFAULTS.paired,
) -> dict:
    """Spearman correlation of simulated system scores with true consistency, over the repetitions.

    Returns ``mean``, ``std``, ``ci_low`` / ``ci_high`` (2.5 / 97.5 percentiles), the
    settings, and ``undefined``: how many repetitions gave every system the same score
    (a constant metric), whose correlation is undefined and left out of the statistics.
    """
    import numpy as np

    if len(set(proportions)) < 2:
        raise ValueError(f"a correlation needs at least two different proportions, got {list(proportions)}")
    system_scores = simulate_system_scores(
        consistent_scores, inconsistent_scores, proportions, samples, repetitions, seed, paired
    )
    consistency = 1 - np.asarray(proportions, dtype=float)
    correlations = _spearman_rows(system_scores, consistency)
    defined = correlations[np.isfinite(correlations)]
    nan = float("nan")
    return {
        "mean": float(defined.mean()) if len(defined) else nan,
        "std": float(defined.std()) if len(defined) else nan,
        "ci_low": float(np.percentile(defined, 2.5)) if len(defined) else nan,
        "ci_high": float(np.percentile(defined, 97.5)) if len(defined) else nan,
        "undefined": int(len(correlations) - len(defined)),
        "proportions": [float(p) for p in proportions],
        "samples": samples,
        "repetitions": repetitions,
        "seed": seed,
        "paired": paired,
    }


def _spearman_rows(rows: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row with ``target`` (as scipy's ``spearmanr``), NaN for a constant row."""
    import numpy as np
    from scipy import stats as scipy_stats

    row_ranks = scipy_stats.rankdata(rows, axis=1)
    target_ranks = scipy_stats.rankdata(target)
    row_dev = row_ranks - row_ranks.mean(axis=1, keepdims=True)
    target_dev = target_ranks - target_ranks.mean()
    spread = np.sqrt((row_dev**2).sum(axis=1) * (target_dev**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (row_dev @ target_dev) / np.where(spread > 0, spread, 1), np.nan)


SYSTEM_LEVEL_COLUMNS = ("mean", "std", "ci_low", "ci_high", "undefined")


def load_score_pools(
    scores_dir=None, consistent_scores=None, inconsistent_scores=None
) -> tuple[list[dict], list[dict]]:
    """Scored records of consistent and inconsistent responses: a ``meta-eval q2-wow`` folder, or two score files."""
    from pathlib import Path

    from ..data import read_results
    from ..data.corpora.q2_wow import set_of
    from ..errors import InputError
    from ..metrics.registry import check_scores

    if scores_dir and (consistent_scores or inconsistent_scores):
        raise InputError("give either --scores DIR or --consistent-scores/--inconsistent-scores, not both")
    if scores_dir:
        path = Path(scores_dir) / "scores.jsonl"
        if not path.exists():
            raise InputError(f"{path} not found; --scores takes the --out folder of 'faithkit meta-eval q2-wow'")
        records = read_results(path)
        check_scores(records, path)
        return (
            [r for r in records if set_of(r["id"]) == "consistent"],
            [r for r in records if set_of(r["id"]) == "inconsistent"],
        )
    if not (consistent_scores and inconsistent_scores):
        raise InputError("no scores given: pass --scores DIR, or both --consistent-scores and --inconsistent-scores")
    for path in (consistent_scores, inconsistent_scores):
        if not Path(path).exists():
            raise InputError(f"score file not found: {path}")
    pools = read_results(consistent_scores), read_results(inconsistent_scores)
    for path, records in zip((consistent_scores, inconsistent_scores), pools):
        check_scores(records, path)
    return pools


def default_score_keys(records: list[dict]) -> list[str]:
    """Known score fields (of any registered metric) that every scored record carries."""
    from ..metrics.registry import METRICS

    known = [key for spec in METRICS.values() for key in spec.score_keys] + ["overlap_f1"]
    scored = [r for r in records if "error" not in r]
    return [key for key in dict.fromkeys(known) if scored and all(r.get(key) is not None for r in scored)]


def system_level_table(
    consistent: list[dict], inconsistent: list[dict], keys: Sequence[str] | None = None, **settings
) -> list[dict]:
    """:func:`system_level_correlation` for each score key of the two pools of records, one result row per key.

    ``settings`` are the correlation's (proportions, samples, repetitions, seed, paired). A
    pool smaller than ``samples`` is drawn from with replacement, so the spread understates
    the uncertainty: that is logged as a warning.
    """
    import logging

    from ..errors import InputError

    keys = list(keys or default_score_keys(consistent + inconsistent))
    if not keys:
        raise InputError("no score field found in the records; name one with --key")
    samples = settings.get("samples", DEFAULTS.samples)
    results = []
    for key in keys:
        pools = []
        for name, records in (("consistent", consistent), ("inconsistent", inconsistent)):
            values = [float(r[key]) for r in records if "error" not in r and r.get(key) is not None]
            if not values:
                raise InputError(f"no {name} record has a '{key}' score; check --key")
            if len(values) < samples:
                logging.getLogger(__name__).warning(
                    "%s: each simulated system draws %d responses from only %d %s scores (with replacement), so "
                    "the correlation's spread understates its uncertainty; score more responses or lower --samples",
                    key,
                    samples,
                    len(values),
                    name,
                )
            pools.append(values)
        result = system_level_correlation(pools[0], pools[1], **settings)
        results.append({"score": key, "consistent": len(pools[0]), "inconsistent": len(pools[1]), **result})
    return results


def write_system_level(out, results: list[dict]) -> None:
    """``system_level.json`` and ``system_level.csv`` in the folder ``out`` (created if missing)."""
    import csv
    from pathlib import Path

    from ..data.files import replacing, write_json

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "system_level.json", results)
    with replacing(out / "system_level.csv", newline="") as handle:
        writer = csv.DictWriter(
            handle,
            fieldnames=[
                "score",
                *SYSTEM_LEVEL_COLUMNS,
                "consistent",
                "inconsistent",
                "samples",
                "repetitions",
                "seed",
                "paired",
            ],
            extrasaction="ignore",
        )
        writer.writeheader()
        writer.writerows(results)
