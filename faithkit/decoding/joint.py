"""Joint greedy batching: the greedy decodes of several cells as one generate call, each cell's processors on its rows.

Greedy search treats every row on its own, so the rows of several cells (plain greedy and each
two-view cell's 2B rows) can go through one generate call, one forward pass per step for all
of them: every forward pass reads the weights once for every cell instead of once per cell, and
the tokens are each cell's own.
"""

from __future__ import annotations

import torch
from transformers import LogitsProcessor

from .grid_plan import CellRun, FiniteLogits
from .prefill import PreparedBatch

JOINT_CACHE_BYTES = 2**30
"""The most key/value cache one joint greedy decode may hold (:func:`joint_runs`), as its rows' prompt width plus
``max_new_tokens`` times :func:`cache_bytes_per_token`. Every row keeps its cache until the call ends: the Table-4
dev grid's ten greedy cells on 8 contexts, 152 rows in one call, took SmolLM2's sweep to a 6.41 GB peak
(docs/measurements.md)."""


def cache_bytes_per_token(model) -> int:
    """The key/value cache one token takes in every layer of ``model`` (at its dtype)."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * heads * head_dim * model.dtype.itemsize


def joint_row_budget(model, length: int) -> int:
    """How many rows of ``length`` tokens (prompt and response) a joint decode takes: :data:`JOINT_CACHE_BYTES` of
    cache, at least one."""
    return max(1, JOINT_CACHE_BYTES // (cache_bytes_per_token(model) * length))


def joint_runs(
    batch: PreparedBatch, runs: dict[tuple, CellRun], extra: list, new_tokens: int
) -> dict[tuple, list[CellRun]]:
    """Decode key -> the runs decoded with it in one generate call: the batch's greedy runs whose rows are as wide.

    Greedy search treats every row on its own, so the rows of several cells (plain greedy and each
    two-view cell's 2B rows) can go through one generate call, one forward pass per step for all
    of them, each cell's processors applied to its own rows: every forward pass reads the weights
    once for every cell instead of once per cell, and the tokens are each cell's own. Not with
    ``extra`` processors (one instance would see every cell's rows) nor for encoder-decoder models.
    A group's cache (its rows' width plus ``new_tokens``) stays within :data:`JOINT_CACHE_BYTES`
    (a run alone may hold more), since every row keeps its own cache until the call ends.
    """
    if extra or batch.blocks is None:
        return {}
    by_width: dict[int, list[CellRun]] = {}
    for run in runs.values():
        if run.cell.search == "greedy" and run.copies == 1:
            by_width.setdefault(batch.rows(run.views)["input_ids"].shape[1], []).append(run)
    groups: list[list[CellRun]] = []
    for width, same_width in by_width.items():
        most = joint_row_budget(batch.model, width + new_tokens)
        rows = most  # start a new group at the first run
        for run in same_width:
            if rows + batch.contexts * run.views > most:
                groups.append([])
                rows = 0
            groups[-1].append(run)
            rows += batch.contexts * run.views
    return {run.cell.decode_key: group for group in groups if len(group) > 1 for run in group}


def decode_jointly(model, batch: PreparedBatch, runs: list[CellRun], generate_kwargs: dict) -> list[torch.Tensor]:
    """Greedy decodes of several cells as one generate call (see :func:`joint_runs`); one output per run."""
    parts = [batch.for_cell(run.views, 1) for run in runs]
    cache = parts[0]["cache"]
    for index, layer in enumerate(cache.layers):  # the merged caches are new tensors: extending the first is safe
        layer.keys = torch.cat([part["cache"].layers[index].keys for part in parts])
        layer.values = torch.cat([part["cache"].layers[index].values for part in parts])
    ends = torch.tensor([part["input_ids"].shape[0] for part in parts]).cumsum(0).tolist()
    segments = _RowSegments(
        [(end - part["input_ids"].shape[0], end) for end, part in zip(ends, parts)],
        [[FiniteLogits(model.dtype), *run.cell.strategy.processors(None)] for run in runs],
    )
    outputs = model.generate(
        input_ids=torch.cat([part["input_ids"] for part in parts]),
        attention_mask=torch.cat([part["attention_mask"] for part in parts]),
        cache=cache,
        logits_processor=[segments],
        **runs[0].kwargs,
        **generate_kwargs,
    )
    return [outputs[start:end] for start, end in segments.spans]


class _RowSegments(LogitsProcessor):
    """Applies each cell's processors to that cell's rows of a joint batch (``spans``: each cell's row range)."""

    def __init__(self, spans: list[tuple[int, int]], processors: list[list]):
        self.spans, self.processors = spans, processors

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        parts = []
        for (start, end), processors in zip(self.spans, self.processors):
            part = scores[start:end]
            for processor in processors:
                part = processor(input_ids[start:end], part)
            parts.append(part)
        return torch.cat(parts)
