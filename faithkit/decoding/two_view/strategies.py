"""The two-view strategies, PMI-DECODE, CAD and AdaCAD: what a user names (``--strategy pmi``), as a strategy.

Each is its parameters (:mod:`.parameters`) plus what decoding needs. Their processors (:mod:`.pmi_decode`,
:mod:`.cad`) need torch and transformers, which take seconds to import; the strategies do not, so the command line
builds its flags from them (and ``--help`` answers) without those imports. A strategy imports its processor when it
first decodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..base import Sampling, Strategy, sampling_kwargs
from .parameters import CADParameters, PMIParameters


@dataclass(frozen=True)
class PMI(Strategy, PMIParameters):
    """PMI-DECODE (Nandwani et al., EMNLP 2023, arXiv 2305.12191, §4.2): see :class:`~faithkit.decoding.PMIDecode`.

    Inside the top-p set of P(y | d, h, y<t), rank by
    ``alpha * [log P(y|d,h,y<t) - log P(y|h,y<t)] + (1 - alpha) * log P(y|d,h,y<t)``.

    Args:
        alpha (`float`, defaults to 0.25): weight of the PMI term, in [0, 1]; 0 is plain decoding, 1 ranks by PMI
            alone.
        top_p (`float`, defaults to 0.6): nucleus of P(y | d, h) the token is chosen from, in (0, 1]; 1 keeps every
            token.

    Examples:

    ```python
    >>> from faithkit.decoding import PMI
    >>> strategy = PMI(alpha=0.5)
    >>> strategy.label, strategy.spec()  # a cell's and a file's name; the config entry that rebuilds it
    ('pmi_a0.5_p0.6', {'name': 'pmi', 'alpha': 0.5, 'top_p': 0.6})
    >>> PMI(alpha=0).decodes_as_plain("greedy")  # greedy's best token is always in the top-p set: one decode serves
    True
    >>> PMI(alpha=2)
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: alpha must be in [0, 1], got 2 (0 = plain decoding, 1 = rank by PMI alone)
    ```
    """

    name: ClassVar[str] = "pmi"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "PMI-DECODE: alpha * CPMI + (1 - alpha) * log P(y | d, h) inside the top-p set"

    def decodes_as_plain(self, search: str) -> bool:
        # greedy: the best token is always in the top-p set; beam search may want tokens outside it
        return self.alpha == 0 and (search == "greedy" or self.top_p == 1)

    def processors(self, sampling: Sampling | None = None) -> list:
        from .pmi_decode import PMIDecode

        return [PMIDecode.of(self, **sampling_kwargs(sampling))]


@dataclass(frozen=True)
class CAD(Strategy, CADParameters):
    """Context-Aware Decoding (Shi et al., 2023, arXiv 2305.14739): see :class:`~faithkit.decoding.two_view.cad.ContextAwareDecode`.

    Decode from ``softmax[(1 + alpha) logit(y | d, h) - alpha logit(y | h)]``.

    Args:
        alpha (`float`, defaults to 0.5): how far to push away from the history-only distribution, at least 0;
            0 is plain decoding, the paper uses 0.5 and 1.

    Examples:

    ```python
    >>> from faithkit.decoding import CAD
    >>> CAD(alpha=1).label, CAD(alpha=1).spec()
    ('cad_a1', {'name': 'cad', 'alpha': 1})
    >>> CAD(alpha=0).decode_key("beam")  # no push: plain decoding's decode, run once for both
    ('plain', 'beam')
    >>> CAD(alpha=-1)
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: alpha must be at least 0, got -1 (0 = plain decoding; the paper uses 0.5 and 1)
    ```
    """

    name: ClassVar[str] = "cad"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "CAD: (1 + alpha) logit(y | d, h) - alpha logit(y | h)"

    def decodes_as_plain(self, search: str) -> bool:
        return self.alpha == 0

    def processors(self, sampling: Sampling | None = None) -> list:
        from .cad import ContextAwareDecode

        return [ContextAwareDecode.of(self, **sampling_kwargs(sampling))]


@dataclass(frozen=True)
class AdaCAD(Strategy):
    """Adaptive CAD (Wang et al., 2024, arXiv 2409.07394): see :class:`~faithkit.decoding.two_view.cad.AdaptiveContextAwareDecode`.

    CAD with ``alpha`` set at every step to the Jensen–Shannon divergence (nats) between
    P(y | d, h, y<t) and P(y | h, y<t): no parameters.

    Examples:

    ```python
    >>> from faithkit.decoding import AdaCAD
    >>> AdaCAD().spec(), AdaCAD().searches
    ({'name': 'adacad'}, ('greedy', 'beam', 'sample'))
    ```
    """

    name: ClassVar[str] = "adacad"
    views: ClassVar[int] = 2
    searches: ClassVar[tuple[str, ...]] = ("greedy", "beam", "sample")
    summary: ClassVar[str] = "AdaCAD: CAD with alpha = JSD(P(y | d, h), P(y | h)) per token"

    def processors(self, sampling: Sampling | None = None) -> list:
        from .cad import AdaptiveContextAwareDecode

        return [AdaptiveContextAwareDecode.of(self, **sampling_kwargs(sampling))]
