"""PMI-DECODE (Nandwani et al., EMNLP 2023, arXiv 2305.12191, §4.2) as a transformers logits processor.

At each step the next token is ranked by:

    score(y) = alpha * [log P(y | d, h, y<t) - log P(y | h, y<t)] + (1 - alpha) * log P(y | d, h, y<t)

over the top-p set of ``P(y | d, h, y<t)`` only. Both distributions come from one batched
forward pass: the batch holds the conditioned views in its first half and the history-only
views of the same contexts in its second half, and the processor keeps the halves on the
same tokens.
"""

from __future__ import annotations

import torch
from transformers import TopPLogitsWarper

from .processor import TwoViewProcessor, log_probs_pair
from .parameters import PMIParameters


class PMIDecode(TwoViewProcessor):
    r"""Rank next tokens by conditional PMI with the document, inside the top-p set of the conditioned model.

    The batch given to ``generate`` has **2B rows**: rows ``[0, B)`` are the conditioned views
    (document + history) and rows ``[B, 2B)`` the history-only views of the same contexts, in
    the same order (:func:`faithkit.decoding.build_inputs` makes them). One forward pass per
    step serves both halves. The processor returns the combined scores for the conditioned
    rows **copied onto the history-only rows**, so greedy and beam search pick the same
    tokens in both halves; only the first half of the output is the answer (beams and
    ``num_return_sequences`` keep that order: generate expands every row in place).

    Tokens that earlier processors set to ``-inf`` are handled without NaN: a token forbidden
    in either half is not chosen (both halves must take it), unless the history-only half
    forbids every token of the top-p set, in which case the set is ranked by the conditioned
    log-probabilities alone.

    Sampling: ``generate(do_sample=True)`` draws every row independently, which would let the
    history-only rows drift away from their conditioned rows. So for sampling, construct the
    processor with ``do_sample=True`` (and the ``temperature`` / ``top_k`` to apply to the
    combined scores): it draws one token per conditioned row itself and returns that token as a one-hot
    (``0`` at the token, ``-inf`` elsewhere) for both halves. Whatever generate does after it
    (its own temperature, top-k, top-p warpers, argmax or multinomial) keeps a one-hot
    unchanged, so generate's own ``temperature``/``top_k``/``top_p`` have no effect; put
    PMIDecode last in ``logits_processor``. Beam sampling (``do_sample=True`` with
    ``num_beams>1``) cannot be kept synchronised and is not supported. The first call of a
    generate run checks that the batch is two views of the same contexts (a ``ValueError``
    otherwise: build it with ``build_inputs``); every call checks that the halves ended on the
    same token and that the scores are finite, and raises if not.

    Draws come from torch's global RNG (``torch.manual_seed`` makes a run reproducible), or,
    given ``generators``, each conditioned row from its own ``torch.Generator``: then a row's
    tokens depend on its own seed only, not on which rows share its batch or in what order
    (:func:`faithkit.decoding.generate` seeds them from the row ids).

    Args:
        alpha (`float`, defaults to 0.25): weight of the PMI term, in [0, 1]. ``alpha=0`` with ``top_p=1`` is plain
            decoding; ``alpha=1`` ranks by PMI alone within the top-p set.
        top_p (`float`, defaults to 0.6): nucleus of the conditioned distribution the token is
            chosen from, in (0, 1]; same definition as transformers' ``TopPLogitsWarper``.
        do_sample (`bool`, defaults to False): draw the token inside the processor (see above).
        temperature (`float`, defaults to 1.0): divides the combined scores before sampling.
        top_k (`int`, *optional*): sample among the k best combined scores only.
        generators (`list[torch.Generator]`, *optional*): one per conditioned row (B x
            ``num_return_sequences`` when sampling several per context; copies of one context
            share its generator and draw in turn).

    The defaults and ranges of ``alpha`` and ``top_p`` are those of the ``pmi`` strategy
    (:class:`~faithkit.decoding.two_view.strategies.PMI`): the numbers are checked against them here;
    ``PMIDecode.of(strategy)`` takes a strategy's, checked when it was made.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import PMIDecode, build_inputs, decode_responses
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> inputs = build_inputs(model, tokenizer, ["The Eiffel Tower is 330 metres tall."],
    ...                       [["How tall is the Eiffel Tower?"]])  # 2 rows: conditioned, then history-only
    >>> outputs = model.generate(**inputs, max_new_tokens=12, logits_processor=[PMIDecode(alpha=0.25, top_p=0.6)])
    >>> decode_responses(model, tokenizer, outputs, inputs)  # plain decoding says "330 meters"
    ['The Eiffel Tower is 330 metres tall.']

    >>> _ = torch.manual_seed(0)  # sampling: the processor draws, generate follows
    >>> sampler = PMIDecode(alpha=0.25, top_p=0.6, do_sample=True, temperature=0.7, top_k=50)
    >>> outputs = model.generate(**inputs, do_sample=True, max_new_tokens=12, logits_processor=[sampler])
    >>> decode_responses(model, tokenizer, outputs, inputs)
    ['The Eiffel Tower is 330 metres tall.']

    >>> PMIDecode(alpha=1.5)  # checked against the pmi strategy's declaration
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: alpha must be in [0, 1], got 1.5 (0 = plain decoding, 1 = rank by PMI alone)
    ```
    """

    method = "PMIDecode"

    def __init__(
        self,
        alpha: float = PMIParameters.alpha,
        top_p: float = PMIParameters.top_p,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        generators: list[torch.Generator] | None = None,
    ):
        super().__init__(do_sample, temperature, top_k, generators)
        self.use(PMIParameters(alpha=float(alpha), top_p=float(top_p)))  # checked as the pmi strategy's

    def use(self, parameters: PMIParameters) -> None:
        self.alpha, self.top_p = parameters.alpha, parameters.top_p

    def combine(self, scores_c: torch.Tensor, scores_h: torch.Tensor) -> torch.Tensor:
        """PMI-DECODE scores of the conditioned rows from both halves' scores; -inf outside the allowed set."""
        in_set = top_p_set(torch.log_softmax(scores_c.float(), dim=-1), self.top_p)
        safe_c, safe_h, allowed = log_probs_pair(scores_c, scores_h, in_set)
        combined = self.alpha * (safe_c - safe_h) + (1 - self.alpha) * safe_c
        return combined.masked_fill(~allowed, -float("inf")).to(scores_c.dtype)


def top_p_set(logprobs: torch.Tensor, top_p: float, max_k: int = 1024) -> torch.Tensor:
    """Boolean mask of transformers' ``TopPLogitsWarper`` set (min_tokens_to_keep=1), sorting only when it must.

    The warper sorts whole rows (tens of milliseconds per step for a 50k vocabulary on a CPU,
    more than a small model's forward pass). A token is kept when the probability mass at or
    below it exceeds ``1 - top_p``, i.e. ``total - mass above it``, so a nucleus among the top
    ``max_k`` tokens needs only a top-k. Rows with a wider nucleus (flat distributions, where
    float rounding of the two sums could move the boundary) use the warper itself.

    Args:
        logprobs (`torch.Tensor`): next-token log-probabilities, ``(rows, vocabulary)``.
        top_p (`float`): the nucleus's mass, in (0, 1]; 1 keeps every token of nonzero probability.
        max_k (`int`, defaults to 1024): the widest top-k tried before the warper sorts the row.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.two_view.pmi_decode import top_p_set
    >>> logprobs = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    >>> top_p_set(logprobs, top_p=0.75).tolist(), top_p_set(logprobs, top_p=0.9).tolist()
    ([[True, True, False, False]], [[True, True, True, False]])
    ```
    """
    probs = logprobs.softmax(dim=-1)
    if top_p >= 1.0:
        return probs > 0
    k = min(64, max_k, probs.shape[-1])
    total = probs.sum(dim=-1, keepdim=True)
    while True:
        values, indices = probs.topk(k, dim=-1)
        keep = (total - (values.cumsum(dim=-1) - values)) > (1 - top_p)
        keep[:, 0] = True
        unresolved = keep[:, -1]
        if not unresolved.any() or k >= min(max_k, probs.shape[-1]):
            break
        k = min(max_k, probs.shape[-1], k * 4)
    in_set = torch.zeros_like(probs, dtype=torch.bool).scatter_(1, indices, keep)
    if unresolved.any():
        in_set[unresolved] = torch.isfinite(TopPLogitsWarper(top_p)(None, logprobs[unresolved]))
    return in_set
