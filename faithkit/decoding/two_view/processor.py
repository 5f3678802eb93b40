"""The machinery every two-view strategy shares: one batch of 2B rows, one combined score, halves kept in step.

The batch given to ``generate`` holds the B conditioned views (document + history) and then
the B history-only views of the same contexts (:func:`faithkit.decoding.build_inputs`). One
forward pass per step serves both. A :class:`TwoViewProcessor` combines the two halves' scores
into one score for each conditioned row and returns it **for both halves**, so greedy and beam
search take the same token in both. Sampling cannot be left to generate (it draws every row
on its own): the processor is told so (``do_sample=True``), draws the token itself with a
:class:`~faithkit.decoding.sampling.RowSampler` and hands generate a one-hot, which every later warper and the final
argmax or multinomial keep.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch
from transformers import LogitsProcessor

from ...serving.precision import check_finite
from ..sampling import RowSampler


Processor = TypeVar("Processor", bound="TwoViewProcessor")


class TwoViewProcessor(LogitsProcessor):
    """Base of the processors that decode from two views of each context; subclasses define :meth:`combine`.

    The first call of a generate run checks that the halves are two views of the same contexts
    (:func:`check_two_views`); every call checks that the scores are finite and that the halves
    ended on the same token, and raises, saying what to do, if not (inputs not built as pairs, a
    processor after this one, or generate sampled each row itself: a processor is told only what it is
    given, so sampling is its own ``do_sample``, never read off generate).

    A subclass's constructor takes its parameters as numbers and checks them against its strategy's
    declarations; :meth:`of` makes a strategy's processor from its numbers, checked when the strategy was made.

    Args:
        do_sample (`bool`, defaults to False): draw the token inside the processor (see the module).
        temperature (`float`, defaults to 1.0): divides the combined scores before the draw; sampling only.
        top_k (`int`, *optional*): draw among the k best combined scores only; sampling only.
        generators (`list[torch.Generator]`, *optional*): one per conditioned row, as in
            :class:`~faithkit.decoding.sampling.RowSampler`; sampling only.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.two_view.processor import TwoViewProcessor
    >>> class Contrast(TwoViewProcessor):
    ...     method = "Contrast"
    ...     def combine(self, scores_c, scores_h):
    ...         return 2 * scores_c - scores_h
    >>> Contrast()(torch.tensor([[7, 8, 9], [0, 8, 9]]), torch.tensor([[1.0, 2.0], [0.0, 3.0]])).tolist()
    [[2.0, 1.0], [2.0, 1.0]]
    >>> Contrast()(torch.tensor([[7, 8, 9]]), torch.tensor([[1.0, 2.0]]))
    Traceback (most recent call last):
      ...
    ValueError: Contrast needs 2B rows (B conditioned views, then the B history-only views), got 1 rows; build the inputs with faithkit.decoding.build_inputs
    ```
    """

    method = "this processor"

    def __init__(
        self,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        generators: list[torch.Generator] | None = None,
    ):
        if not do_sample and (temperature != 1.0 or top_k or generators is not None):
            raise ValueError(
                f"{self.method}: temperature, top_k and generators apply to sampling only; pass do_sample=True as well"
            )
        self.do_sample = do_sample
        self.sampler = RowSampler(temperature, top_k, generators) if do_sample else None
        self._width: int | None = (
            None  # the input width of the last call: a call not one token wider starts a generate run
        )

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        rows = scores.shape[0]
        if rows % 2:
            raise ValueError(
                f"{self.method} needs 2B rows (B conditioned views, then the B history-only views), got {rows} "
                "rows; build the inputs with faithkit.decoding.build_inputs"
            )
        half = rows // 2
        if self._width is None or input_ids.shape[1] != self._width + 1:
            check_two_views(input_ids, self.method)
        self._width = input_ids.shape[1]
        check_finite(scores)
        if not torch.equal(input_ids[:half, -1], input_ids[half:, -1]):
            raise RuntimeError(
                f"{self.method}: the history-only rows no longer end on the same token as their conditioned rows. "
                f"Either a logits processor placed after {self.method} changed the halves' scores differently (a "
                "repetition penalty does: keep faithkit's processor last in logits_processor), or the inputs are "
                "not left-padded pairs ending alike (use faithkit.decoding.build_inputs), or generate sampled each "
                "row independently: for sampling pass do_sample=True (and temperature/top_k) to the processor "
                "itself, e.g. PMIDecode(alpha, top_p, do_sample=True, temperature=0.7); beam sampling "
                "(do_sample=True with num_beams>1) is not supported."
            )
        combined = self.combine(scores[:half], scores[half:])
        if self.sampler is not None:
            combined = self.sampler(input_ids[:half], combined)
        return torch.cat([combined, combined], dim=0)

    @classmethod
    def of(cls: type[Processor], parameters: Any, **sampling) -> Processor:
        """The processor of a strategy (``parameters``: its numbers taken as they are, checked when it was made), with
        the constructor's sampling keywords (``do_sample``, ``temperature``, ``top_k``, ``generators``)."""
        processor = cls.__new__(cls)
        TwoViewProcessor.__init__(processor, **sampling)
        processor.use(parameters)
        return processor

    def use(self, parameters: Any) -> None:
        """Take checked parameters (a strategy is its parameters): a subclass that has parameters sets them here."""

    def combine(self, scores_c: torch.Tensor, scores_h: torch.Tensor) -> torch.Tensor:
        """The conditioned rows' new scores from the conditioned and history-only rows' scores."""
        raise NotImplementedError


def check_two_views(input_ids: torch.Tensor, method: str) -> None:
    """Raise a ValueError unless each row ``i`` of the second half is the history-only view of row ``i``'s context.

    The two views of a context share their ending, the history and the response prefix (the
    conditioned view adds the document before them), and often their start (start tokens, a system
    turn). So once the left padding is set aside (the run of the history-only row's first token, in
    both rows: the conditioned row is the longer, never the more padded), the tokens
    of the history-only row that the two rows do not share at the start must mostly end the
    conditioned row too: at least half of them (where the document joins, tokenisation or a cut
    context may differ by a few tokens). Unrelated prompts share only a few tokens, such as a
    trailing ``Agent:``. Encoder-decoder inputs (the decoder start, the same in every row) pass.

    Args:
        input_ids (`torch.Tensor`): the batch's 2B rows.
        method (`str`): the processor's name, for the message.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.two_view.processor import check_two_views
    >>> check_two_views(torch.tensor([[7, 8, 9], [0, 8, 9]]), "PMIDecode")  # document 7, history 8 9: fine
    >>> check_two_views(torch.tensor([[7, 8, 9], [0, 5, 6]]), "PMIDecode")
    Traceback (most recent call last):
      ...
    ValueError: PMIDecode: rows 0 and 1 are not two views of one context: a history-only row ends as its conditioned row does (history, then response prefix), but these share only their last 0 tokens. The batch must hold the B conditioned views, then the B history-only views of the same contexts: build the inputs with faithkit.decoding.build_inputs
    ```
    """
    half = input_ids.shape[0] // 2
    for row, (conditioned, history) in enumerate(zip(input_ids[:half].tolist(), input_ids[half:].tolist())):
        padding = history[0] if history else None
        conditioned, history = _without_leading(conditioned, padding), _without_leading(history, padding)
        start = _common_length(conditioned, history)
        end = min(_common_length(conditioned[::-1], history[::-1]), len(history) - start)
        if 2 * end < len(history) - start:
            raise ValueError(
                f"{method}: rows {row} and {half + row} are not two views of one context: a history-only row ends "
                f"as its conditioned row does (history, then response prefix), but these share only their last "
                f"{end} tokens. The batch must hold the B conditioned views, then the B history-only views of the "
                "same contexts: build the inputs with faithkit.decoding.build_inputs"
            )


def _without_leading(ids: list[int], token) -> list[int]:
    """``ids`` without the run of ``token`` it starts with."""
    return ids[_common_length(ids, [token] * len(ids)) :]


def _common_length(first: list[int], second: list[int]) -> int:
    """How many leading tokens ``first`` and ``second`` share."""
    for index, (a, b) in enumerate(zip(first, second)):
        if a != b:
            return index
    return min(len(first), len(second))


def log_probs_pair(scores_c: torch.Tensor, scores_h: torch.Tensor, allowed: torch.Tensor | None = None):
    """``(lp_c, lp_h, allowed)``: both halves' log-probabilities with -inf replaced where it would give NaN.

    ``allowed`` (default: every token the conditioned half allows) is narrowed to the tokens
    the history-only half allows too (a token forbidden by an earlier processor in either half
    is not chosen), unless that leaves none, in which case the history-only half is ignored.
    Outside ``allowed`` both are 0; where only the history-only half is -inf it copies
    ``lp_c``. Callers mask their combination with ``allowed`` (``-inf`` outside).

    Args:
        scores_c (`torch.Tensor`): the conditioned rows' scores.
        scores_h (`torch.Tensor`): the history-only rows' scores.
        allowed (`torch.Tensor`, *optional*): the tokens the combination may choose (boolean).

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.two_view.processor import log_probs_pair
    >>> inf = float("inf")
    >>> lp_c, lp_h, allowed = log_probs_pair(torch.tensor([[0.0, 0.0, -inf]]), torch.tensor([[0.0, -inf, 0.0]]))
    >>> allowed.tolist(), [round(value, 4) for value in lp_c[0].tolist()]  # token 1: forbidden in one half
    ([[True, False, False]], [-0.6931, 0.0, 0.0])
    ```
    """
    lp_c = torch.log_softmax(scores_c.float(), dim=-1)
    lp_h = torch.log_softmax(scores_h.float(), dim=-1)
    if allowed is None:
        allowed = torch.isfinite(lp_c)
    finite_h = torch.isfinite(lp_h)
    both = allowed & finite_h
    allowed = torch.where(both.any(dim=-1, keepdim=True), both, allowed)
    safe_c = lp_c.masked_fill(~allowed, 0.0)
    safe_h = torch.where(allowed & finite_h, lp_h, safe_c)
    return safe_c, safe_h, allowed
