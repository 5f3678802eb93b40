"""PMI-DECODE's and CAD's parameters, declared once (default, range, grid, help) and checked when made.

The strategies (:mod:`.strategies`) are these parameters plus what decoding needs; the processors
(:mod:`.pmi_decode`, :mod:`.cad`) check the numbers they are given against them. Both import this module, which
imports no torch; a strategy imports its processor only when it decodes, so no import runs in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...settings.options import check, option


@dataclass(frozen=True)
class PMIParameters:
    """PMI-DECODE's weight of the PMI term and nucleus: the :class:`~faithkit.decoding.PMI` strategy's and the
    :class:`~faithkit.decoding.PMIDecode` processor's, declared once.

    Args:
        alpha (`float`, defaults to 0.25): weight of the PMI term, in [0, 1].
        top_p (`float`, defaults to 0.6): nucleus of P(y | d, h) the token is chosen from, in (0, 1].

    Examples:

    ```python
    >>> from faithkit.decoding.two_view.parameters import PMIParameters
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
    >>> from faithkit.decoding.two_view.parameters import CADParameters
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
