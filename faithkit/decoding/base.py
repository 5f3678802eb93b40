"""What every decoding strategy is: a frozen dataclass of its parameters plus what generate needs to run it.

A strategy's parameters are its dataclass fields, each declared once with
:func:`~faithkit.settings.options.option` (default, range, grid, help); constructing one checks
them. Its class says how many prompt views per context it decodes from (1: the conditioned
view; 2: conditioned and history-only, as PMI-FAITH scores them), which search modes it
supports, and builds its logits processors, importing torch only then. The two-view strategies are declared in
the package :mod:`~faithkit.decoding.two_view` (strategies, then their processors); the registry of all of them is
:mod:`faithkit.decoding.strategies`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from ..errors import ConfigError
from ..settings.options import check
from .generation_options import SEARCHES


class Sampling(NamedTuple):
    """How a processor draws the token itself: warpers on the strategy's scores, and one generator per row (or None).

    Attributes:
        temperature (`float`, defaults to 1.0): divides the scores before the draw.
        top_k (`int`, *optional*): draw among the k best scores only.
        generators (`list[torch.Generator]`, *optional*): one per row, so a row's draw depends on its own seed only;
            None draws from torch's global RNG.

    Examples:

    ```python
    >>> from faithkit.decoding.base import Sampling, sampling_kwargs
    >>> sampling_kwargs(Sampling(temperature=0.7))  # a processor's keywords
    {'do_sample': True, 'temperature': 0.7, 'top_k': None, 'generators': None}
    ```
    """

    temperature: float = 1.0
    top_k: int | None = None
    generators: list | None = None


def parameter_text(value) -> str:
    """A parameter as labels and flags show it: numbers in their shortest form, text as is.

    Args:
        value (`float`, `int` or `str`): the parameter's value.

    Examples:

    ```python
    >>> from faithkit.decoding.base import parameter_text
    >>> parameter_text(0.25), parameter_text(1.0), parameter_text("sample")
    ('0.25', '1', 'sample')
    ```
    """
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def sampling_kwargs(sampling: Sampling | None) -> dict:
    """A processor's sampling keywords: none when it does not draw the token itself.

    Args:
        sampling (`Sampling`, *optional*): how the processor draws; None: it does not.

    Examples:

    ```python
    >>> from faithkit.decoding.base import Sampling, sampling_kwargs
    >>> sampling_kwargs(None), sampling_kwargs(Sampling(top_k=50))
    ({}, {'do_sample': True, 'temperature': 1.0, 'top_k': 50, 'generators': None})
    ```
    """
    return {} if sampling is None else {"do_sample": True, **sampling._asdict()}


@dataclass(frozen=True)
class Strategy:
    """Base of every strategy. Subclasses declare ``name``, ``views``, ``searches``, ``summary`` and their fields.

    A strategy's fields are its parameters, each an :func:`~faithkit.settings.options.option` (default, range,
    help), checked when it is made; its class attributes say how generate runs it.

    Examples:

    ```python
    >>> from faithkit.decoding import STRATEGIES
    >>> {name: cls.views for name, cls in STRATEGIES.items()}  # 2: conditioned and history-only views
    {'plain': 1, 'pmi': 2, 'cad': 2, 'adacad': 2, 'rerank': 1, 'faithful': 1}
    ```
    """

    name: ClassVar[str]
    views: ClassVar[int]
    """1: the batch holds the B conditioned views; 2: then the B history-only views (2B rows)."""
    searches: ClassVar[tuple[str, ...]]
    summary: ClassVar[str]

    def __post_init__(self):
        check(self)

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
        return "_".join(
            [self.name] + [f"{short.get(key, key)}{parameter_text(value)}" for key, value in self.parameters().items()]
        )

    def check_search(self, search: str) -> None:
        """Raise :class:`ConfigError` if this strategy cannot decode with ``search``."""
        if search not in SEARCHES:
            raise ConfigError(f"search {search!r} is unknown; choose one of {', '.join(SEARCHES)}")
        if search not in self.searches:
            reason = (
                " (generate samples every row on its own, so the history-only rows could not follow their "
                "conditioned rows)"
                if search == "beam_sample" and self.views == 2
                else ""
            )
            raise ConfigError(
                f"strategy {self.name} does not support {search} search{reason}; it supports {', '.join(self.searches)}"
            )

    def decodes_as_plain(self, search: str) -> bool:
        """True when this strategy's tokens are plain decoding's under ``search`` (so one decode serves both)."""
        return False

    def sampled(self, search: str) -> bool:
        """True when decoding under ``search`` draws at random (so it needs the rows' seeds)."""
        return search in ("sample", "beam_sample")

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
    """transformers' own greedy search, beam search, sampling and beam sampling on the conditioned view alone.

    Examples:

    ```python
    >>> from faithkit.decoding import Plain
    >>> Plain().processors(), Plain().searches  # generate's own search, every mode
    ([], ('greedy', 'beam', 'sample', 'beam_sample'))
    ```
    """

    name: ClassVar[str] = "plain"
    views: ClassVar[int] = 1
    searches: ClassVar[tuple[str, ...]] = SEARCHES
    summary: ClassVar[str] = "plain decoding of P(y | d, h)"

    def decodes_as_plain(self, search: str) -> bool:
        return True

    def processors(self, sampling: Sampling | None = None) -> list:
        from .sampling import RowSampler

        return [] if sampling is None else [RowSampler(**sampling._asdict())]
