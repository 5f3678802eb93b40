"""Sampling a token per row inside a logits processor, each row from its own generator: plain sampling with seeds,
and every two-view processor (:mod:`~faithkit.decoding.two_view.processor`) on its combined scores."""

from __future__ import annotations

import torch
from transformers import LogitsProcessor, TemperatureLogitsWarper, TopKLogitsWarper


class RowSampler(LogitsProcessor):
    """Draws one token per row from the (temperature / top-k warped) scores and returns it as a one-hot.

    The one-hot is ``0`` at the drawn token and ``-inf`` elsewhere; generate's own warpers and
    its sampling step keep it unchanged. Draws come from torch's global RNG, or, given
    ``generators``, each row from its own ``torch.Generator``, so a row's tokens depend on its
    seed only, not on the rows that share its batch. Used alone it is plain sampling with one
    generator per row; two-view processors use it on their combined scores.

    Args:
        temperature (`float`, defaults to 1.0): divides the scores before the draw.
        top_k (`int`, *optional*): draw among the k best scores only.
        generators (`list[torch.Generator]`, *optional*): one per row (contexts x ``num_return_sequences``;
            copies of one context share its generator and draw in turn).

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.decoding.sampling import RowSampler
    >>> generators = [torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)]
    >>> scores = torch.tensor([[0.5, 0.4, 0.1], [0.1, 0.1, 0.8]]).log()
    >>> RowSampler(temperature=0.7, generators=generators)(None, scores).tolist()  # one token per row, as a one-hot
    [[-inf, 0.0, -inf], [-inf, -inf, 0.0]]
    ```
    """

    def __init__(
        self, temperature: float = 1.0, top_k: int | None = None, generators: list[torch.Generator] | None = None
    ):
        if not float(temperature) > 0.0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        if top_k is not None and (not isinstance(top_k, int) or top_k < 0):
            raise ValueError(f"top_k must be a non-negative integer or None, got {top_k!r}")
        self.generators = generators
        self.warpers: list[LogitsProcessor] = []
        if temperature != 1.0:
            self.warpers.append(TemperatureLogitsWarper(float(temperature)))
        if top_k:
            self.warpers.append(TopKLogitsWarper(top_k))

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        for warper in self.warpers:
            scores = warper(input_ids, scores)
        tokens = self.draw(torch.softmax(scores.float(), dim=-1))
        return torch.full_like(scores, -float("inf")).scatter_(1, tokens, 0.0)

    def draw(self, probs: torch.Tensor) -> torch.Tensor:
        """One token per row: from the global RNG, or each row from its own generator."""
        if self.generators is None:
            return torch.multinomial(probs, num_samples=1)
        if len(self.generators) != probs.shape[0]:
            raise ValueError(
                f"got {len(self.generators)} generators for {probs.shape[0]} rows; give one per "
                "conditioned row (contexts x num_return_sequences)"
            )
        return torch.cat(
            [
                torch.multinomial(row, num_samples=1, generator=generator)
                for row, generator in zip(probs, self.generators)
            ]
        )[:, None]
