"""Decoding strategies: one seam for plain decoding, PMI-DECODE, CAD and AdaCAD.

A strategy is a frozen dataclass of its parameters (each declared once with
:func:`~faithkit.decoding.options.option`: default, range, grid, help) plus what
:func:`~faithkit.decoding.generate.iter_grid` needs to run it: how many prompt views per
context (1: the conditioned view; 2: conditioned and history-only, as PMI-FAITH scores them),
the logits processors, and the search modes it supports. :data:`STRATEGIES` lists them the
way :mod:`faithkit.metrics.registry` lists metrics; :func:`strategy_from_dict` builds one
from a config entry such as ``{name: pmi, alpha: 0.25, top_p: 0.6}``.

Known identities, so callers run one decode for cells that are the same
(:meth:`Strategy.decode_key`): PMI-DECODE with ``alpha=0`` is plain decoding under greedy
search at any ``top_p`` (the best token is always in the top-p set) and under every search
with ``top_p=1``; CAD with ``alpha=0`` is plain decoding. (Beam search with ``alpha=0,
top_p<1`` is not: a beam may not extend with tokens outside its top-p set.) Greedy CAD(alpha) ranks tokens exactly as greedy PMI-DECODE(alpha /
(1 + alpha), top_p=1): both scores are ``log P(y|d,h) - w log P(y|h)`` up to a positive factor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ..errors import ConfigError
from .options import SEARCHES, check, flag, from_mapping, option, range_text


class Sampling(NamedTuple):
    """How a processor draws the token itself: warpers on the strategy's scores, and one generator per row (or None)."""

    temperature: float = 1.0
    top_k: int | None = None
    generators: list | None = None


def _sampling_kwargs(sampling: Sampling | None) -> dict:
    return {} if sampling is None else {"do_sample": True, **sampling._asdict()}


@dataclass(frozen=True)
class Strategy:
    """Base of every strategy. Subclasses declare ``name``, ``views``, ``searches``, ``summary`` and their fields."""

    name: ClassVar[str]
    views: ClassVar[int]
    """1: the batch holds the B conditioned views; 2: then the B history-only views (2B rows)."""
    searches: ClassVar[tuple[str, ...]]
    summary: ClassVar[str]

    def __post_init__(self):
        check(self, where=f"{self.name}: ")

    def parameters(self) -> dict:
        """``{parameter: value}``, as in a config entry (without ``name``)."""
        return dataclasses.asdict(self)

    def spec(self) -> dict:
        """The config entry that rebuilds this strategy: ``{"name": "pmi", "alpha": 0.25, "top_p": 0.6}``."""
        return {"name": self.name, **self.parameters()}

    @property
    def label(self) -> str:
        """A short readable name for cells and files: ``plain``, ``pmi_a0.25_p0.6``, ``cad_a1``, ``adacad``."""
        short = {"alpha": "a", "top_p": "p"}
        return "_".join([self.name] + [f"{short.get(key, key)}{value:g}" for key, value in self.parameters().items()])

    def check_search(self, search: str) -> None:
        """Raise :class:`ConfigError` if this strategy cannot decode with ``search``."""
        if search not in SEARCHES:
            raise ConfigError(f"search {search!r} is unknown; choose one of {', '.join(SEARCHES)}")
        if search not in self.searches:
            reason = (" (generate samples every row on its own, so the history-only rows could not follow their "
                      "conditioned rows)" if search == "beam_sample" and self.views == 2 else "")
            raise ConfigError(f"strategy {self.name} does not support {search} search{reason}; it supports "
                              f"{', '.join(self.searches)}")

    def decodes_as_plain(self, search: str) -> bool:
        """True when this strategy's tokens are plain decoding's under ``search`` (so one decode serves both)."""
        return False

    def decode_key(self, search: str) -> tuple:
        """Equal for cells that decode identically: run one of them, report it under each name."""
        if self.decodes_as_plain(search):
            return ("plain", search)
        return (self.name, tuple(self.parameters().items()), search)

    def processors(self, sampling: Sampling | None = None) -> list:
        """The logits processors that make generate decode with this strategy.

        ``sampling`` is given when the processors must draw the token themselves: always when a
        two-view strategy samples (so both halves take the same token), and for plain sampling
        when every row draws from its own generator.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class Plain(Strategy):
    """transformers' own greedy search, beam search, sampling and beam sampling on the conditioned view alone."""

    name: ClassVar[str] = "plain"
    views: ClassVar[int] = 1
    searches: ClassVar[tuple[str, ...]] = SEARCHES
    summary: ClassVar[str] = "plain decoding of P(y | d, h)"

    def decodes_as_plain(self, search: str) -> bool:
        return True

    def processors(self, sampling: Sampling | None = None) -> list:
        from .two_view import RowSampler

        return [] if sampling is None else [RowSampler(**sampling._asdict())]


@dataclass(frozen=True)
class PMI(Strategy):
    """PMI-DECODE (Nandwani et al., EMNLP 2023, arXiv 2305.12191, §4.2): see :class:`~faithkit.decoding.PMIDecode`.

    Inside the top-p set of P(y | d, h, y<t), rank by
    ``alpha * [log P(y|d,h,y<t) - log P(y|h,y<t)] + (1 - alpha) * log P(y|d,h,y<t)``.
    """

    name: ClassVar[str] = "pmi"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "PMI-DECODE: alpha * CPMI + (1 - alpha) * log P(y | d, h) inside the top-p set"

    alpha: float = option(0.25, "weight of the PMI term", low=0, high=1, grid=(0, 0.25, 0.5, 1),
                          meaning="0 = plain decoding, 1 = rank by PMI alone")
    top_p: float = option(0.6, "nucleus of P(y | document, history) the token is chosen from", low=0, high=1,
                          low_open=True, grid=(0.6, 0.75, 0.9, 1), meaning="1 keeps every token")

    def decodes_as_plain(self, search: str) -> bool:
        # greedy: the best token is always in the top-p set; beam search may want tokens outside it
        return self.alpha == 0 and (search == "greedy" or self.top_p == 1)

    def processors(self, sampling: Sampling | None = None) -> list:
        from .pmi_decode import PMIDecode

        return [PMIDecode(self.alpha, self.top_p, **_sampling_kwargs(sampling))]


@dataclass(frozen=True)
class CAD(Strategy):
    """Context-Aware Decoding (Shi et al., 2023, arXiv 2305.14739): see :class:`~faithkit.decoding.cad.ContextAwareDecode`.

    Decode from ``softmax[(1 + alpha) logit(y | d, h) - alpha logit(y | h)]``.
    """

    name: ClassVar[str] = "cad"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "CAD: (1 + alpha) logit(y | d, h) - alpha logit(y | h)"

    alpha: float = option(0.5, "how far to push away from the history-only distribution", low=0, grid=(0.5, 1),
                          meaning="0 = plain decoding; the paper uses 0.5 and 1")

    def decodes_as_plain(self, search: str) -> bool:
        return self.alpha == 0

    def processors(self, sampling: Sampling | None = None) -> list:
        from .cad import ContextAwareDecode

        return [ContextAwareDecode(self.alpha, **_sampling_kwargs(sampling))]


@dataclass(frozen=True)
class AdaCAD(Strategy):
    """Adaptive CAD (Wang et al., 2024, arXiv 2409.07394): see :class:`~faithkit.decoding.cad.AdaptiveContextAwareDecode`.

    CAD with ``alpha`` set at every step to the Jensen–Shannon divergence (nats) between
    P(y | d, h, y<t) and P(y | h, y<t): no parameters.
    """

    name: ClassVar[str] = "adacad"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "AdaCAD: CAD with alpha = JSD(P(y | d, h), P(y | h)) per token"

    def processors(self, sampling: Sampling | None = None) -> list:
        from .cad import AdaptiveContextAwareDecode

        return [AdaptiveContextAwareDecode(**_sampling_kwargs(sampling))]


STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (Plain, PMI, CAD, AdaCAD)}
STRATEGY_NAMES = tuple(STRATEGIES)


def get_strategy(name: str) -> type[Strategy]:
    if name not in STRATEGIES:
        raise ConfigError(f"unknown strategy '{name}'; choose one of {', '.join(STRATEGY_NAMES)}")
    return STRATEGIES[name]


def strategy_from_dict(spec: Mapping | str | Strategy, where: str = "") -> Strategy:
    """A strategy from a config entry: ``{"name": "pmi", "alpha": 0.25}`` (missing parameters: their defaults), or a name.

    Unknown names or parameters and out-of-range values raise :class:`ConfigError` naming them
    (``where`` prefixes the message, e.g. ``evaluation.strategies[1]: ``).
    """
    if isinstance(spec, Strategy):
        return spec
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping) or "name" not in spec:
        raise ConfigError(f"{where}a strategy is a mapping with a 'name' ({', '.join(STRATEGY_NAMES)}) and its "
                          f"parameters, e.g. {{name: pmi, alpha: 0.25, top_p: 0.6}}; got {spec!r}")
    parameters = {key: value for key, value in spec.items() if key != "name"}
    cls = get_strategy(str(spec["name"]))
    try:
        return from_mapping(cls, parameters, where=f"{where}{cls.name}: ")
    except ConfigError as error:
        raise ConfigError(str(error)) from None


def parameter_fields() -> dict[str, list[tuple[type[Strategy], dataclasses.Field]]]:
    """Every strategy parameter by name, with the strategies that take it (``alpha``: pmi and cad)."""
    table: dict[str, list] = {}
    for cls in STRATEGIES.values():
        for item in dataclasses.fields(cls):
            table.setdefault(item.name, []).append((cls, item))
    return table


def add_parameter_flags(group) -> None:
    """One command-line flag per strategy parameter (``--alpha``, ``--top-p``); unset, each strategy's default applies."""
    for name, owners in parameter_fields().items():
        described = "; ".join(f"{cls.name}: {item.metadata['help']}, {range_text(item)} (default {item.default:g})"
                              for cls, item in owners)
        group.add_argument(f"--{flag(name)}", type=float, default=None, metavar=name.upper(), help=described)


def strategy_from_args(name: str, args) -> Strategy:
    """The strategy ``name`` with the parameter flags given on the command line; a flag it does not take is an error."""
    cls = get_strategy(name)
    given = {key: getattr(args, key) for key in parameter_fields() if getattr(args, key, None) is not None}
    own = {item.name for item in dataclasses.fields(cls)}
    foreign = [f"--{flag(key)}" for key in given if key not in own]
    if foreign:
        raise ConfigError(f"{', '.join(foreign)} {'do' if len(foreign) > 1 else 'does'} not apply to --strategy "
                          f"{name}; its parameters are {', '.join('--' + flag(k) for k in own) or 'none'}")
    return from_mapping(cls, given, where=f"{name}: ")


class Cell(NamedTuple):
    """One decode of a grid: a strategy under a search mode."""

    strategy: Strategy
    search: str = "greedy"

    @property
    def label(self) -> str:
        """``pmi_a0.25_p0.6`` under greedy search, ``plain_beam`` / ``cad_a1_sample`` under the others."""
        return self.strategy.label if self.search == "greedy" else f"{self.strategy.label}_{self.search}"

    @property
    def decode_key(self) -> tuple:
        return self.strategy.decode_key(self.search)

    def check(self) -> Cell:
        self.strategy.check_search(self.search)
        return self


def as_cell(cell) -> Cell:
    """A :class:`Cell` from a Cell, a ``(strategy, search)`` pair, a strategy or its dict (greedy search)."""
    if isinstance(cell, Cell):
        return cell.check()
    if isinstance(cell, tuple) and len(cell) == 2 and isinstance(cell[1], str):
        return Cell(strategy_from_dict(cell[0]), cell[1]).check()
    return Cell(strategy_from_dict(cell)).check()
