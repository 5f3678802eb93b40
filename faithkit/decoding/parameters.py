"""PMI-DECODE's and CAD's parameters, declared once (default, range, grid, help) and checked when made.

The strategies (:mod:`~faithkit.decoding.two_view_strategies`) are these parameters plus what decoding needs; the
processors (:mod:`~faithkit.decoding.pmi_decode`, :mod:`~faithkit.decoding.cad`) check the values they are given
against them too. Neither imports the other's module at import time, and this one imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ..settings.options import check, option


@dataclass(frozen=True)
class PMIParameters:
    """PMI-DECODE's weight of the PMI term and nucleus: the :class:`~faithkit.decoding.PMI` strategy's and the
    :class:`~faithkit.decoding.PMIDecode` processor's, declared once.

    Args:
        alpha (`float`, defaults to 0.25): weight of the PMI term, in [0, 1].
        top_p (`float`, defaults to 0.6): nucleus of P(y | d, h) the token is chosen from, in (0, 1].

    Examples:

    ```python
    >>> from faithkit.decoding.parameters import PMIParameters
    >>> PMIParameters(top_p=0.9)
    PMIParameters(alpha=0.25, top_p=0.9)
    ```
    """

    alpha: float = option(
        0.25,
        "weight of the PMI term",
        low=0,
        high=1,
        grid=(0, 0.25, 0.5, 1),
        meaning="0 = plain decoding, 1 = rank by PMI alone",
    )
    top_p: float = option(
        0.6,
        "nucleus of P(y | document, history) the token is chosen from",
        low=0,
        high=1,
        low_open=True,
        grid=(0.6, 0.75, 0.9, 1),
        meaning="1 keeps every token",
    )

    def __post_init__(self):
        check(self)


@dataclass(frozen=True)
class CADParameters:
    """CAD's push away from the history-only distribution, declared once for the strategy and the processor.

    Args:
        alpha (`float`, defaults to 0.5): at least 0; 0 is plain decoding.

    Examples:

    ```python
    >>> from faithkit.decoding.parameters import CADParameters
    >>> CADParameters(alpha=1)
    CADParameters(alpha=1)
    ```
    """

    alpha: float = option(
        0.5,
        "how far to push away from the history-only distribution",
        low=0,
        grid=(0.5, 1),
        meaning="0 = plain decoding; the paper uses 0.5 and 1",
    )

    def __post_init__(self):
        check(self)


Parameters = TypeVar("Parameters", PMIParameters, CADParameters)


def checked_parameters(cls: type[Parameters], given, **more) -> Parameters:
    """``given`` as it is when it is ``cls`` (a strategy is one, checked when made), else ``cls`` made from it and
    ``more`` (numbers, each checked against its declaration); a processor's parameters either way.

    Args:
        cls (`type`): :class:`PMIParameters` or :class:`CADParameters`.
        given (`float` or `cls`): the first parameter's value, or the parameters whole.
        **more (`float`): the other parameters' values (given whole, they must be left at their defaults).

    Examples:

    ```python
    >>> from faithkit.decoding import PMI
    >>> from faithkit.decoding.parameters import PMIParameters, checked_parameters
    >>> checked_parameters(PMIParameters, 0.5, top_p=0.9), checked_parameters(PMIParameters, PMI(alpha=0.5))
    (PMIParameters(alpha=0.5, top_p=0.9), PMI(alpha=0.5, top_p=0.6))
    >>> checked_parameters(PMIParameters, PMI(alpha=0.5), top_p=0.9)
    Traceback (most recent call last):
      ...
    ValueError: top_p: given with a PMI, which holds them already
    ```
    """
    if isinstance(given, cls):
        changed = [key for key, value in more.items() if value != getattr(cls, key)]
        if changed:
            raise ValueError(f"{', '.join(changed)}: given with a {type(given).__name__}, which holds them already")
        return given
    return cls(float(given), **{key: float(value) for key, value in more.items()})
