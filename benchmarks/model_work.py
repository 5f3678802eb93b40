"""Count the arithmetic a causal LM is asked to do, to tell a speed-up apart from doing less work.

On a CPU these models are compute bound, so two ways of computing the same scores can be
compared by their multiply-accumulates: every token a forward pass runs (padding
included) costs the model's body (all weights but the embeddings and the output
projection), and every position whose logits are computed costs the output projection.
Attention over the cache is left out: at a few hundred tokens it is a few percent.

    with ModelWork(model) as work:
        ...                      # any number of forward passes
    work.macs, work.tokens, work.logit_positions
"""

from __future__ import annotations

import torch


class ModelWork:
    """A forward pre-hook on ``model`` that adds up the tokens run and the logit positions computed."""

    def __init__(self, model):
        self.model = model
        head = model.get_output_embeddings().weight
        embeddings = {id(model.get_input_embeddings().weight), id(head)}
        self.body_params = sum(p.numel() for p in model.parameters() if id(p) not in embeddings)
        self.head_params = head.numel()
        self.tokens = self.logit_positions = 0

    def __enter__(self) -> ModelWork:
        self._handle = self.model.register_forward_pre_hook(self._count, with_kwargs=True)
        return self

    def __exit__(self, *exc) -> None:
        self._handle.remove()

    def _count(self, module, args, kwargs) -> None:
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        rows, width = ids.shape
        keep = kwargs.get("logits_to_keep", 0)
        kept = len(keep) if isinstance(keep, torch.Tensor) else (keep or width)
        self.tokens += rows * width
        self.logit_positions += rows * min(kept, width)

    @property
    def macs(self) -> int:
        return self.tokens * self.body_params + self.logit_positions * self.head_params
