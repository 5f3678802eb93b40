"""The prompts' work done once: each view's block of prompts prefilled at its own width, shared by every cell.

generate prefills each row at the batch's width, and for beam search (or several samples) once
per copy. :class:`PreparedBatch` prefills the conditioned and the history-only blocks once, without
padding, and hands each cell a copy of that cache (or, for encoder-decoder models, the encoder's output).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence

import torch

from ..serving import models


@torch.no_grad()
def prompt_cache(model, inputs: dict, copies: int = 1, groups: int = 2):
    """The KV cache of every prompt but its last token, for ``generate(..., cache=...)``; None when not applicable.

    generate prefills each row at the batch's width, and for beam search (or several samples)
    once per copy. The history-only views are shorter than the conditioned ones, so prefilling
    the ``groups`` consecutive blocks of rows (the two halves) at their own widths and copying
    the result ``copies`` times (``max(num_beams, num_return_sequences)``) does the same work
    once and without padding. Only decoder-only models whose cache is made of plain
    ``DynamicLayer`` layers qualify (sliding-window or static caches cannot be re-padded).
    """
    blocks = prefill_blocks(model, inputs, groups)
    return None if blocks is None else merge_blocks(blocks, inputs["input_ids"].shape[1] - 1, copies)


@torch.no_grad()
def prefill_blocks(model, inputs: dict, groups: int = 2) -> list | None:
    """Each of the ``groups`` blocks of rows prefilled at its own width (see :func:`prompt_cache`), or None."""
    from transformers.cache_utils import DynamicLayer

    if (
        model.config.is_encoder_decoder
        or not models.attends_to_whole_past(model)
        or "position_ids" not in inspect.signature(model.forward).parameters
    ):
        return None
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    if ids.shape[1] < 2 or ids.shape[0] % groups:
        return None
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    caches = []
    for block_ids, block_mask in zip(ids[:, :-1].chunk(groups), mask[:, :-1].chunk(groups)):
        if not block_mask.any():  # one-token prompts: nothing to prefill
            return None
        start = int((block_mask.sum(0) > 0).nonzero()[0])
        block_ids, block_mask = block_ids[:, start:], block_mask[:, start:]
        positions = (block_mask.long().cumsum(-1) - 1).masked_fill(block_mask == 0, 0)
        output = model(input_ids=block_ids, attention_mask=block_mask, position_ids=positions, use_cache=True, **keep)
        cache = getattr(output, "cache", None)
        if cache is None or any(type(layer) is not DynamicLayer for layer in cache.layers):
            return None
        caches.append(cache)
    return caches


def merge_blocks(blocks: list, width: int, copies: int = 1):
    """One cache of the blocks' rows, each left-padded to ``width`` positions, every row repeated ``copies`` times.

    The blocks are left untouched (new tensors), so one prefill serves any number of cells.
    """
    merged = copy.copy(blocks[0])
    merged.layers = [copy.copy(layer) for layer in blocks[0].layers]
    for index, layer in enumerate(merged.layers):  # left-pad with zeros: the attention mask hides those columns
        layer.keys = torch.cat([_pad_left(block.layers[index].keys, width) for block in blocks])
        layer.values = torch.cat([_pad_left(block.layers[index].values, width) for block in blocks])
    if copies > 1:
        merged.batch_repeat_interleave(copies)
    return merged


def _pad_left(states: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(states, (0, 0, width - states.shape[-2], 0))


class PreparedBatch:
    """One batch of contexts with its prompt work done once for every cell that decodes it.

    The inputs hold the views the cells need (2B rows if any cell is a two-view strategy, else
    B). Decoder-only models prefill each view's block of prompts once (:func:`prefill_blocks`):
    the conditioned block serves every cell, the history-only block only two-view cells.
    Encoder-decoder models run the encoder once. :meth:`for_cell` gives a cell its rows and its
    own copy of that work (generate extends the cache it is given).
    """

    def __init__(self, model, inputs: dict, views: int):
        self.model, self.inputs, self.views = model, inputs, views
        self.contexts = inputs["input_ids"].shape[0] // views
        self.blocks = None
        self.encoder_outputs = None
        if model.config.is_encoder_decoder:
            encoder = model.get_encoder()
            with torch.no_grad():
                self.encoder_outputs = encoder(
                    input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], return_dict=True
                )
        else:
            self.blocks = prefill_blocks(model, inputs, groups=views)

    def rows(self, views: int) -> dict:
        """``input_ids`` and ``attention_mask`` of the first ``views`` views, without columns that are all padding."""
        ids = self.inputs["input_ids"][: self.contexts * views]
        mask = self.inputs["attention_mask"][: self.contexts * views]
        used = (mask.sum(0) > 0).nonzero()
        if self.model.config.is_encoder_decoder:  # right-padded
            end = int(used[-1]) + 1
            return {"input_ids": ids[:, :end], "attention_mask": mask[:, :end]}
        start = int(used[0]) if views < self.views else 0
        return {"input_ids": ids[:, start:], "attention_mask": mask[:, start:]}

    def for_cell(self, views: int, copies: int) -> dict:
        """The generate kwargs of a cell with ``views`` views and ``copies`` copies per row (beams, samples)."""
        rows = self.rows(views)
        if self.encoder_outputs is not None:
            width = rows["input_ids"].shape[1]
            state = self.encoder_outputs.last_hidden_state[: rows["input_ids"].shape[0], :width]
            return {**rows, "encoder_outputs": type(self.encoder_outputs)(last_hidden_state=state)}
        if self.blocks is None:
            return rows
        return {**rows, "cache": merge_blocks(self.blocks[:views], rows["input_ids"].shape[1] - 1, copies)}


def select_contexts(kwargs: dict, contexts: Sequence[int], views: int, copies: int) -> dict:
    """The generate kwargs of a few contexts of a batch (their rows in every view, and their copies in the cache)."""
    total = kwargs["input_ids"].shape[0] // views
    rows = torch.tensor([view * total + i for view in range(views) for i in contexts])
    selected = {key: kwargs[key][rows] for key in ("input_ids", "attention_mask")}
    if "encoder_outputs" in kwargs:
        outputs = kwargs["encoder_outputs"]
        selected["encoder_outputs"] = type(outputs)(last_hidden_state=outputs.last_hidden_state[rows])
    if "cache" in kwargs:
        cache = copy.deepcopy(kwargs["cache"])
        cache.batch_select_indices(torch.tensor([int(row) * copies + c for row in rows for c in range(copies)]))
        selected["cache"] = cache
    return selected
