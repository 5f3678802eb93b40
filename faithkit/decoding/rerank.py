"""Reranking: N plain candidates per context, and the judge's pick among them under a fluency bound.

No serving engine decodes two views in step (what PMI-DECODE, CAD and AdaCAD need), but
every engine can draw N candidates with its own sampling or beam search. A faithfulness
judge then picks among them, as the sweep picks its operating point (:func:`choose`): the
most faithful response by the judge's score (in the direction the judge's metric declares)
among the responses whose fluency — the generator's mean token log-likelihood of the
response under ``fluency_view`` (``history``: log P(r | h); ``document``: log P(r | d, h)) — is
at least the ``fluency_reference`` response's (``greedy``, or the ``best`` of them) minus
``fluency_tolerance``. The greedy response is itself a candidate, so a context without a
better one keeps it.

The judge is a callable (:data:`Judge`) rather than a metric here, because metrics sit above
decoding: :class:`faithkit.generation.rerank.Judges` builds it from the metric registry, and
:func:`faithkit.decoding.iter_grid` calls it once per batch with every context's
candidates, so a prefix-sharing scorer runs each context once for all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from typing import ClassVar

from ..errors import ConfigError
from .base import Sampling, Strategy
from ..settings.options import option, option_like
from .generation_options import row_seed

CANDIDATE_SEARCHES = ("sample", "beam")
"""How candidates are drawn: plain sampling (each candidate from its own seeded generator), or beam search
with ``n`` beams, every beam returned."""
FLUENCY_VIEWS = {"history": "logp_history", "document": "logp_doc_history"}
"""The fluency's view and the PMI-FAITH row field that holds it: ``history``, the response as a reply to the dialogue
alone (a response that says the document's facts in other words than the model would is unlikely there), or
``document``, the response read with the document too (saying what the document says is likely there)."""
FLUENCY_REFERENCES = ("greedy", "best")
"""Whose fluency the bound is measured from: the greedy response's, or the most fluent response's."""
BEAM_CANDIDATE = "beam"
"""An ``also`` entry: the best beam of plain beam search with :data:`BEAM_CANDIDATE_BEAMS` beams."""
BEAM_CANDIDATE_BEAMS = 4

Judge = Callable[["Rerank", Sequence[str], Sequence, Sequence[str]], list[tuple[float | None, float | None]]]
"""``judge(strategy, documents, histories, responses)``: one ``(score, fluency)`` per response (None: no value,
e.g. an empty response), the score from ``strategy.judge``'s metric with higher more faithful, the fluency the
generator's mean token log-likelihood of the response under ``strategy.fluency_view``."""


@dataclass(frozen=True)
class Rerank(Strategy):
    """N plain candidates per context, the judge's most faithful one within the fluency bound.

    The cell's own search is greedy: the greedy response is the fallback and the fluency
    reference; ``candidate_search`` says how the other ``n`` candidates are drawn.
    """

    name: ClassVar[str] = "rerank"
    views: ClassVar[int] = 1
    searches: ClassVar[tuple[str, ...]] = ("greedy",)
    summary: ClassVar[str] = (
        "n plain candidates (sampling or beam search) and the greedy response; the judge's "
        "best whose fluency is at least the reference response's minus fluency_tolerance"
    )

    n: int = option(8, "candidates per context besides the greedy response", low=1, grid=(8,))
    candidate_search: str = option(
        "sample",
        "how the candidates are drawn: sample (each from its own seeded generator) or beam (n beams, all returned)",
    )
    judge: str = option(
        "pmi-faith",
        "metric that scores the candidates, by its registry name (pmi-faith: the generator itself as PMI-FAITH judge)",
    )
    fluency_tolerance: float = option(
        1.0,
        "how far below the reference response's fluency (the generator's mean "
        "token log-likelihood of it under fluency_view) a chosen candidate may be",
        low=0,
    )
    fluency_view: str = option(
        "history",
        "the fluency's view: history (mean token log P(r | h)) or document (log P(r | d, h): a faithful response "
        "phrased otherwise than the model would is not held below the bound)",
        choices=tuple(FLUENCY_VIEWS),
    )
    fluency_reference: str = option(
        "greedy",
        "the response the bound is measured from: greedy, or best (the most fluent)",
        choices=FLUENCY_REFERENCES,
    )
    also: str = option(
        "",
        "one more candidate from each of these decodes, joined by '+': beam (plain beam search, 4 beams, the best) or "
        "a strategy decoded greedily, as --strategy writes it (pmi, pmi:alpha=0.5,top_p=0.6, cad:alpha=1, adacad); "
        "empty: none",
    )

    def __post_init__(self):
        super().__post_init__()
        if self.candidate_search not in CANDIDATE_SEARCHES:
            raise ConfigError(
                f"rerank: --candidate-search {self.candidate_search!r} is unknown; "
                f"choose one of {', '.join(CANDIDATE_SEARCHES)}"
            )
        if not str(self.judge).strip():
            raise ConfigError("rerank: --judge is empty; name a metric of the registry, e.g. pmi-faith")

    @property
    def label(self) -> str:
        """``rerank_n8_sample_pmi-faith_f1``: n, candidate search, judge, fluency tolerance, then the fluency's view
        and reference where they are not rerank's defaults (``_document_best``) and the ``also`` decodes
        (``+beam+pmi``)."""
        bound = "".join(
            f"_{value}"
            for value, default in ((self.fluency_view, "history"), (self.fluency_reference, "greedy"))
            if value != default
        )
        also = "".join(f"+{part}" for part in self.also_parts())
        return f"{self.name}_n{self.n}_{self.candidate_search}_{self.judge}_f{self.fluency_tolerance:g}{bound}{also}"

    def sampled(self, search: str) -> bool:
        return self.candidate_search == "sample"

    def also_parts(self) -> list[str]:
        """The ``also`` decodes as written, each a name for files (``pmi:alpha=0.5,top_p=0.6``: ``pmi_alpha0.5_top_p0.6``);
        :func:`faithkit.decoding.strategies.also_decodes` reads them."""
        parts = (part.strip() for part in str(self.also).split("+"))
        return [part.replace(":", "_").replace(",", "_").replace("=", "").replace(" ", "") for part in parts if part]

    def candidates_key(self) -> tuple:
        """Equal for rerank cells that draw the same sampled or beam candidates (whatever their judge, bound and
        ``also`` decodes, which run under their own keys)."""
        return ("rerank-candidates", self.candidate_search, self.n)

    def processors(self, sampling: Sampling | None = None) -> list:
        raise ConfigError(
            "rerank is no logits processor: decode it with faithkit.decoding.generate or iter_grid, "
            "which draw its candidates and call its judge"
        )


@dataclass(frozen=True)
class Faithful(Rerank):
    """faithkit's faithful-decoding recipe: rerank with its defaults set to the recipe, the claim checker judging the
    greedy response, ``n`` samples and the ``also`` decodes (beam search, PMI-DECODE, CAD) under a bound that a
    faithful response phrased otherwise than the generator would passes. Every parameter can still be given.
    """

    name: ClassVar[str] = "faithful"
    summary: ClassVar[str] = (
        "faithkit's faithful-decoding recipe: the claim checker's most faithful of the greedy response, n samples, "
        "a beam, PMI-DECODE and CAD, within the fluency bound under the document"
    )

    n: int = option_like(Rerank, "n", default=4, grid=(4,))
    judge: str = option_like(Rerank, "judge", default="faithkit-checker")
    fluency_tolerance: float = option_like(Rerank, "fluency_tolerance", default=2.0)  # benchmarks/rerank_floor.py
    fluency_view: str = option_like(Rerank, "fluency_view", default="document")
    also: str = option_like(Rerank, "also", default="beam+pmi+cad")


def candidate_seeds(seed: int, n: int) -> list[int]:
    """The seeds of a context's ``n`` sampled candidates: candidate k depends on the context's seed and k alone."""
    return [row_seed(seed, f"candidate {k}") for k in range(n)]


@dataclass(frozen=True)
class Choice:
    """A context's pick: its index among ``[greedy, *candidates]``, the response, and every response's values."""

    index: int
    response: str
    scores: list[float | None]
    fluencies: list[float | None]


def fluency_bound(fluencies: Sequence[float | None], tolerance: float, reference: str = "greedy") -> float | None:
    """The lowest fluency a response may have: the ``reference`` response's fluency (``greedy``: index 0; ``best``:
    the highest) minus ``tolerance``; None (no bound) when that response has no fluency (an empty greedy response)."""
    if reference == "greedy":
        anchor = fluencies[0]
    else:
        known = [f for f in fluencies if f is not None and not math.isnan(f)]
        anchor = max(known) if known else None
    return None if anchor is None else anchor - tolerance


def faithful_score(value: float | None, sign: int) -> float | None:
    """A judge's ``value`` with higher more faithful: ``sign`` is +1 for a score where higher is more faithful, -1 for
    one where lower is (its metric's declared direction)."""
    return None if value is None else sign * value


def _scored(score: float | None) -> bool:
    return score is not None and not math.isnan(score)


def choose(
    scores: Sequence[float | None], fluencies: Sequence[float | None], tolerance: float, reference: str = "greedy"
) -> int:
    """The index of the highest score among responses whose fluency is at least :func:`fluency_bound`.

    Index 0 is the greedy response. A response without a score or fluency is not eligible;
    without a bound every scored response is. Ties go to the earlier response; nothing
    eligible gives 0.
    """
    bound = fluency_bound(fluencies, tolerance, reference)
    eligible = [
        i
        for i, score in enumerate(scores)
        if _scored(score) and (bound is None or ((fluency := fluencies[i]) is not None and fluency >= bound))
    ]
    return max(eligible, key=lambda i: (scores[i], -i)) if eligible else 0


def why_chosen(
    scores: Sequence[float | None],
    fluencies: Sequence[float | None],
    tolerance: float,
    index: int,
    reference: str = "greedy",
) -> dict:
    """Why :func:`choose` picked ``index`` (0: the greedy response), for a reader of the output: ``fluency_bound``
    (the reference response's fluency minus ``tolerance``; None without it), ``reason`` (one sentence, responses
    numbered as ``scores`` is, greedy 0) and ``excluded_by_bound`` (how many responses that score higher than the
    pick the bound left out: when not 0, the bound changed the choice)."""
    bound = fluency_bound(fluencies, tolerance, reference)
    scored = [i for i, score in enumerate(scores) if _scored(score)]
    below = [i for i in scored if bound is not None and ((f := fluencies[i]) is None or f < bound)]
    chosen = scores[index] if index in scored else None
    better_below = [i for i in below if chosen is None or scores[i] > chosen]  # type: ignore[operator]
    within = len(scored) - len(below)
    where = (
        ""
        if bound is None
        else f" within the fluency bound {bound:.3f} ({reference} {bound + tolerance:.3f} - {tolerance:g})"
    )
    if chosen is None:
        reason = "greedy kept: no response has a score"
    elif index == 0:
        reason = f"greedy kept: no other of the {within} responses{where} scores higher than its {chosen:.3f}"
    else:
        greedy = "no score" if scores[0] is None else f"{scores[0]:.3f}"
        reason = (
            f"candidate {index}: the highest score, {chosen:.3f} (greedy {greedy}), of the {within} responses{where}"
        )
    if better_below:
        top = max(better_below, key=lambda i: scores[i])  # type: ignore[arg-type,return-value]
        fluency = fluencies[top]
        reason += (
            f"; {len(better_below)} scoring higher fell below the bound, the best candidate {top} "
            f"({scores[top]:.3f}, fluency {'none' if fluency is None else f'{fluency:.3f}'})"
        )
    return {"fluency_bound": bound, "reason": reason, "excluded_by_bound": len(better_below)}


def rerank(
    strategy: Rerank,
    judge: Judge,
    documents: Sequence[str],
    histories: Sequence,
    greedy: Sequence[str],
    candidates: Sequence[Sequence[str]],
) -> list[Choice]:
    """Each context's :class:`Choice` among its greedy response and candidates, all judged in one ``judge`` call."""
    if not len(documents) == len(histories) == len(greedy) == len(candidates):
        raise ValueError(
            f"one greedy response and one candidate list per context: got {len(documents)} documents, "
            f"{len(histories)} histories, {len(greedy)} greedy responses, {len(candidates)} lists"
        )
    options = [[first, *rest] for first, rest in zip(greedy, candidates)]
    flat = [
        (document, history, response)
        for document, history, responses in zip(documents, histories, options)
        for response in responses
    ]
    judged = judge(strategy, [f[0] for f in flat], [f[1] for f in flat], [f[2] for f in flat])
    choices, start = [], 0
    for responses in options:
        values = judged[start : start + len(responses)]
        start += len(responses)
        scores, fluencies = [v[0] for v in values], [v[1] for v in values]
        index = choose(scores, fluencies, strategy.fluency_tolerance, strategy.fluency_reference)
        choices.append(Choice(index, responses[index], scores, fluencies))
    return choices
