"""Context-Aware Decoding and its adaptive variant as two-view logits processors (the same 2B-row batch as PMIDecode).

CAD (Shi et al., 2023, "Trusting Your Evidence: Hallucinate Less with Context-aware Decoding",
arXiv 2305.14739) decodes from:

    softmax[(1 + alpha) * logit(y | d, h, y<t) - alpha * logit(y | h, y<t)]

which is transformers' classifier-free guidance with ``guidance_scale = 1 + alpha`` and the
history-only view as the "unconditional" half. AdaCAD (Wang et al., 2024, arXiv 2409.07394)
sets ``alpha`` per row and step to the Jensen–Shannon divergence (natural log, so in
[0, ln 2]) between the two next-token distributions: the document is leaned on only where
it changes the model's prediction.

Both work on log-probabilities, which changes no softmax and no argmax (a row's logits and
log-probabilities differ by a constant). Under beam search the beams add up the returned
scores, ``(1 + alpha) log P(y|d,h) - alpha log P(y|h)``, as transformers does for
classifier-free guidance; that is ``1 + alpha`` times PMI-DECODE's score at
``alpha / (1 + alpha)`` with ``top_p = 1``, so the two rank beams identically too.
"""

from __future__ import annotations

import torch
from transformers import ClassifierFreeGuidanceLogitsProcessor

from .processor import TwoViewProcessor, log_probs_pair
from .parameters import CADParameters


class ContextAwareDecode(TwoViewProcessor):
    r"""CAD: ``(1 + alpha) log P(y | d, h) - alpha log P(y | h)`` for both halves of a 2B-row batch.

    The arithmetic is transformers' ``ClassifierFreeGuidanceLogitsProcessor(1 + alpha)`` applied
    to the conditioned (first) and history-only (second) halves; a token an earlier processor
    forbade in either half stays forbidden, without NaN. Sampling, generators and the
    halves-in-step check work as for :class:`~faithkit.decoding.PMIDecode`.

    Args:
        alpha (`float`, defaults to 0.5): contrast weight, at least 0 (the ``cad`` strategy's range); ``alpha=0`` is
            plain decoding.
        do_sample (`bool`, defaults to False): draw the token inside the processor, as
            :class:`~faithkit.decoding.PMIDecode` does.
        temperature (`float`, defaults to 1.0): divides the combined scores before sampling.
        top_k (`int`, *optional*): sample among the k best combined scores only.
        generators (`list[torch.Generator]`, *optional*): one per conditioned row, as for
            :class:`~faithkit.decoding.PMIDecode`.

    Examples:

    One step on a vocabulary of three tokens; in ``model.generate(**build_inputs(...),
    logits_processor=[ContextAwareDecode(alpha=1.0)])`` it runs at every step, as
    :class:`~faithkit.decoding.PMIDecode` does.

    ```python
    >>> import torch
    >>> from faithkit.decoding import ContextAwareDecode
    >>> input_ids = torch.tensor([[7, 8, 9], [0, 8, 9]])  # a conditioned row, then its history-only row (0: padding)
    >>> scores = torch.tensor([[0.5, 0.4, 0.1], [0.6, 0.1, 0.3]]).log()  # P(y | d, h), then P(y | h)
    >>> cad = ContextAwareDecode(alpha=1.0)(input_ids, scores)
    >>> [round(p, 4) for p in cad[0].softmax(-1).tolist()]  # token 1, which the document made likelier, wins
    [0.2033, 0.7805, 0.0163]
    >>> torch.equal(cad[0], cad[1])  # both halves take the same token
    True
    ```
    """

    method = "ContextAwareDecode"

    def __init__(
        self,
        alpha: float = CADParameters.alpha,
        do_sample: bool = False,
        temperature: float = 1.0,
        top_k: int | None = None,
        generators: list[torch.Generator] | None = None,
    ):
        super().__init__(do_sample, temperature, top_k, generators)
        self.use(CADParameters(alpha=float(alpha)))  # checked as the cad strategy's

    def use(self, parameters: CADParameters) -> None:
        self.alpha = parameters.alpha
        self.guidance = ClassifierFreeGuidanceLogitsProcessor(1 + self.alpha) if self.alpha > 0 else None

    def combine(self, scores_c: torch.Tensor, scores_h: torch.Tensor) -> torch.Tensor:
        safe_c, safe_h, allowed = log_probs_pair(scores_c, scores_h)
        if self.guidance is None:
            combined = safe_c
        else:  # the guidance processor takes the B conditioned rows' ids with the 2B rows' scores
            combined = self.guidance(torch.empty(safe_c.shape[0], 0), torch.cat([safe_c, safe_h]))
        return combined.masked_fill(~allowed, -float("inf")).to(scores_c.dtype)


class AdaptiveContextAwareDecode(TwoViewProcessor):
    r"""AdaCAD: CAD with ``alpha_t = JSD(P(. | d, h, y<t) || P(. | h, y<t))`` for each row and step.

    ``JSD(p || q) = 1/2 KL(p || m) + 1/2 KL(q || m)`` with ``m = (p + q) / 2``, in nats, over
    the tokens both halves allow; then the scores are
    ``(1 + alpha_t) log P(y | d, h) - alpha_t log P(y | h)``. There is no parameter: where the
    document does not change the prediction (JSD near 0) this is plain decoding.

    Args:
        do_sample (`bool`, defaults to False): draw the token inside the processor, as
            :class:`~faithkit.decoding.PMIDecode` does.
        temperature (`float`, defaults to 1.0): divides the combined scores before sampling.
        top_k (`int`, *optional*): sample among the k best combined scores only.
        generators (`list[torch.Generator]`, *optional*): one per conditioned row, as for
            :class:`~faithkit.decoding.PMIDecode`.

    Examples:

    The step of :class:`ContextAwareDecode`'s example: the two distributions differ a little (JSD 0.08 nats), so the
    scores lean a little towards the document's token.

    ```python
    >>> import torch
    >>> from faithkit.decoding import AdaptiveContextAwareDecode
    >>> input_ids = torch.tensor([[7, 8, 9], [0, 8, 9]])
    >>> scores = torch.tensor([[0.5, 0.4, 0.1], [0.6, 0.1, 0.3]]).log()
    >>> adacad = AdaptiveContextAwareDecode()(input_ids, scores)
    >>> [round(p, 4) for p in adacad[0].softmax(-1).tolist()]
    [0.4788, 0.4319, 0.0893]
    ```
    """

    method = "AdaptiveContextAwareDecode"

    def combine(self, scores_c: torch.Tensor, scores_h: torch.Tensor) -> torch.Tensor:
        safe_c, safe_h, allowed = log_probs_pair(scores_c, scores_h)
        alpha = jensen_shannon(safe_c, safe_h, allowed)[:, None]
        combined = safe_h + (safe_c - safe_h) * (1 + alpha)  # the guidance arithmetic with a per-row scale
        return combined.masked_fill(~allowed, -float("inf")).to(scores_c.dtype)


def jensen_shannon(lp_c: torch.Tensor, lp_h: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Per row, the Jensen–Shannon divergence (nats) of the two distributions renormalised over ``allowed``:
    AdaCAD's weight, 0 where the document changes nothing, at most ln 2.

    Args:
        lp_c (`torch.Tensor`): the conditioned rows' log-probabilities, ``(rows, vocabulary)``.
        lp_h (`torch.Tensor`): the history-only rows' log-probabilities, the same shape.
        allowed (`torch.Tensor`): the tokens both may take (boolean, the same shape).

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.two_view.cad import jensen_shannon
    >>> p, q = torch.tensor([[0.5, 0.4, 0.1]]).log(), torch.tensor([[0.6, 0.1, 0.3]]).log()
    >>> allowed = torch.ones(1, 3, dtype=torch.bool)
    >>> round(jensen_shannon(p, q, allowed).item(), 4), jensen_shannon(p, p, allowed).item()
    (0.0766, 0.0)
    ```
    """
    p = torch.softmax(lp_c.masked_fill(~allowed, -float("inf")), dim=-1)
    q = torch.softmax(lp_h.masked_fill(~allowed, -float("inf")), dim=-1)
    m = (p + q) / 2
    kl_pm = (torch.special.xlogy(p, p) - torch.special.xlogy(p, m)).sum(-1)
    kl_qm = (torch.special.xlogy(q, q) - torch.special.xlogy(q, m)).sum(-1)
    return (kl_pm + kl_qm) / 2
