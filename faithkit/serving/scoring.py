"""Log-probabilities of target tokens after contexts, computed without repeated work.

Every LM-based score in faithkit reduces to: for many ``(context_ids, target_ids)``
pairs, the log-probability of each target token. The requests' token sequences are laid
out as a **prefix tree**: a run of tokens that several rows share (one document under many
histories, one context under many candidate responses, candidate responses that start
alike, as an α/p sweep's do) is run once, and its key/value cache is handed to the rows
that continue it. Identical requests are computed once. Nodes of one tree level run in
right-padded batches of similar length, so little compute goes to padding, and logits are
computed only where a target token is predicted. None of this changes a number:
:func:`reference_token_logprobs` is the slow, obviously-correct definition (one unpadded
pass per pair) that the fast path is tested against.

Memory stays bounded however long a request is. A batch goes through the model in windows
of columns, each continuing the key/value cache of the ones before (chunked prefill), so one
forward call runs at most :data:`MAX_TOKENS_PER_CALL` token positions, rows × columns (the
``max_tokens_per_call`` argument), and keeps logits for at most :data:`MAX_LOGITS` values,
rows × kept columns × vocabulary (a window ends early where its columns predict more targets
than that). That bounds what used to grow with length: the activations, attention scores
where a model materialises them, and the logits with their float32 log-softmax, which the
vocabulary makes large (4 bytes × 262,144 per position for Gemma 3: 1 GB each for 1,024
positions; now 128 MB each whatever the vocabulary). What still grows with length, and then
dominates, is the key/value cache of the rows in flight: rows × tokens × 2 × layers ×
key/value width × 4 bytes, 46 KB per token for SmolLM2-135M (0.55 GB for two 6,000-token
rows), plus a shared run's cache while its children run; ``batch_size`` × the model's
context length bounds it. Batches never mix shared runs with leaves and are never more than
half padding, so a short row does not inherit a long one's width.
"""

from __future__ import annotations

import bisect
import copy
import inspect
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import models, precision

Request = tuple[Sequence[int], Sequence[int]]
ExtraIds = Sequence[Sequence[int]]
"""Per target position, token ids whose log-probabilities to report there as well (the same count at every position)."""

MIN_SAVED_TOKENS = 32
"""A shared run of tokens gets its own pass (one more forward call, a cache copy per row) only
when sharing it saves at least this many tokens of compute; shorter runs are repeated per row."""

MAX_TOKENS_PER_CALL = 1024
"""Token positions (batch rows × columns) one forward call runs at most: longer batches go in windows."""

MAX_LOGITS = 1 << 25
"""Logit values (rows × kept columns × vocabulary) one forward call keeps at most."""

_END = -1  # marks where a sequence ends inside the tree; never run through the model


@torch.no_grad()
def reference_token_logprobs(model, context_ids: Sequence[int], target_ids: Sequence[int]) -> torch.Tensor:
    """log P(target_t | context, target_<t) for each t, from one full unpadded forward pass."""
    ids = torch.tensor([list(context_ids) + list(target_ids)], device=models.input_device(model))
    logits = model(input_ids=ids, use_cache=False).logits[0].float()
    start = len(context_ids)
    logprobs = torch.log_softmax(logits[start - 1 : ids.shape[1] - 1], dim=-1)
    return logprobs.gather(-1, ids[0, start:, None]).squeeze(-1).cpu()


@dataclass
class TokenEvidence:
    """What one request's next-token distributions say at each target position ``t``, beyond the target.

    ``logprobs[t]`` is log P(target_t); ``top_ids[t]`` / ``top_logprobs[t]`` the ``top_k`` likeliest
    tokens there and their log-probabilities (most likely first); ``extra_logprobs[t, m]`` the
    log-probability of the m-th token id asked for at ``t`` (see :meth:`TokenScorer.evidence`).
    Shapes ``[T]``, ``[T, top_k]``, ``[T, top_k]``, ``[T, m]``; the last three are empty when not asked for.
    """

    logprobs: torch.Tensor
    top_ids: torch.Tensor
    top_logprobs: torch.Tensor
    extra_logprobs: torch.Tensor


@torch.no_grad()
def reference_token_evidence(
    model, context_ids: Sequence[int], target_ids: Sequence[int], top_k: int = 0, extra_ids: ExtraIds | None = None
) -> TokenEvidence:
    """:class:`TokenEvidence` of one request from one full unpadded forward pass (the slow definition)."""
    ids = torch.tensor([list(context_ids) + list(target_ids)], device=models.input_device(model))
    logits = model(input_ids=ids, use_cache=False).logits[0].float()
    start = len(context_ids)
    logprobs = torch.log_softmax(logits[start - 1 : ids.shape[1] - 1], dim=-1).cpu()
    top = logprobs.topk(top_k, dim=-1)
    extra = torch.tensor([list(row) for row in extra_ids] if extra_ids else [[]] * len(target_ids), dtype=torch.long)
    return TokenEvidence(
        logprobs.gather(-1, ids[0, start:, None].cpu()).squeeze(-1),
        top.indices,
        top.values,
        logprobs.gather(-1, extra) if extra.numel() else torch.zeros(len(target_ids), extra.shape[1]),
    )


@dataclass(eq=False)
class _Node:
    """A run of tokens at absolute positions ``start …`` that all ``requests`` (indices) go through."""

    tokens: list[int]
    start: int
    requests: list[int]
    children: list[_Node] = field(default_factory=list)

    @property
    def runnable(self) -> list[int]:
        return self.tokens[:-1] if self.tokens and self.tokens[-1] == _END else self.tokens


def _prefix_tree(sequences: list[list[int]], min_saved: int = MIN_SAVED_TOKENS) -> list[_Node]:
    """The top-level nodes of the tree of ``sequences``; runs shared too little to pay off are repeated per row."""
    order = sorted(range(len(sequences)), key=lambda i: sequences[i])
    return _simplify(_build(order, [sequences[i] + [_END] for i in range(len(sequences))], 0), min_saved)


def _build(members: list[int], sequences: list[list[int]], depth: int) -> list[_Node]:
    """Nodes for ``members`` (sorted by sequence) from position ``depth`` on: one per distinct next token."""
    nodes, start = [], 0
    while start < len(members):
        first = sequences[members[start]][depth]
        end = start
        while end < len(members) and sequences[members[end]][depth] == first:
            end += 1
        group = members[start:end]
        length = 1  # extend the run while every member agrees (the _END marker makes sequences distinct)
        while (
            all(len(sequences[i]) > depth + length for i in group)
            and len({sequences[i][depth + length] for i in group}) == 1
        ):
            length += 1
        head = sequences[group[0]]
        node = _Node(head[depth : depth + length], depth, group)
        if head[depth + length - 1] != _END:
            node.children = _build(group, sequences, depth + length)
        nodes.append(node)
        start = end
    return nodes


def _simplify(nodes: list[_Node], min_saved: int) -> list[_Node]:
    """Push a node's tokens down into its children when running them once saves fewer than ``min_saved`` tokens."""
    result = []
    for node in nodes:
        if node.children and (len(node.children) - 1) * len(node.runnable) < min_saved:
            for child in node.children:
                child.tokens, child.start = node.tokens + child.tokens, node.start
            result.extend(_simplify(node.children, min_saved))
        else:
            node.children = _simplify(node.children, min_saved)
            result.append(node)
    return result


def _batches(nodes: list[_Node], size: int) -> list[list[_Node]]:
    """Consecutive runs of the length-sorted ``nodes``, at most ``size`` each and at most half padding.

    Without the padding cap a handful of rows of very different lengths (the four views of one
    long document: two of a few tokens, two of thousands) would run as one batch as wide as the longest.
    """
    batches: list[list[_Node]] = []
    for node in nodes:
        batch = batches[-1] if batches else []
        width = len(node.runnable)
        if 0 < len(batch) < size and (len(batch) + 1) * width <= 2 * (sum(len(n.runnable) for n in batch) + width):
            batch.append(node)
        else:
            batches.append([node])
    return batches


def _selected_rows(cache, rows: torch.Tensor):
    """A new cache holding ``rows`` of ``cache``; the parent cache itself stays untouched.

    Selecting rows indexes into new tensors, and layers extend their tensors by concatenation,
    so copying the layer objects (not their tensors, as a deep copy would) is enough.
    """
    selected = copy.copy(cache)
    selected.layers = [copy.copy(layer) for layer in cache.layers]
    selected.batch_select_indices(rows)
    return selected


@dataclass
class _Parent:
    """What a batch of child nodes continues: the parents' batch cache, its attention mask, each node's row."""

    cache: object
    mask: torch.Tensor
    row_of: dict


def _empty_evidence(length: int, top_k: int, extras: int) -> TokenEvidence:
    return TokenEvidence(
        torch.zeros(0),
        torch.zeros(length, top_k, dtype=torch.long),
        torch.zeros(length, top_k),
        torch.zeros(length, extras),
    )


class TokenScorer:
    """Batched, prefix-sharing computation of target-token log-probabilities for one causal LM.

    ``batch_size`` caps the rows of a batch, ``max_tokens_per_call`` the token positions of one
    forward call (the module docstring says what each bounds).
    """

    def __init__(
        self, model, batch_size: int = 8, share_prefixes: bool = True, max_tokens_per_call: int = MAX_TOKENS_PER_CALL
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_tokens_per_call < 1:
            raise ValueError(f"max_tokens_per_call must be at least 1, got {max_tokens_per_call}")
        self.model = model
        self.batch_size = batch_size
        self.max_tokens_per_call = max_tokens_per_call
        self.share_prefixes = share_prefixes
        self._can_trim_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._vocabulary = model.config.get_text_config().vocab_size
        self._device = models.input_device(model)
        # Padding inside a cache is exact under full attention (the mask hides it, position ids skip it); any
        # other attention (a sliding window counts cache slots, padding included) runs shared runs one per batch.
        self._pads_caches = models.attends_to_whole_past(model)

    def __call__(
        self, requests: Sequence[Request], progress: Callable[[int], None] | None = None
    ) -> list[torch.Tensor]:
        """One tensor of per-token log-probabilities per request; ``progress(n)`` is told as rows finish."""
        return [evidence.logprobs for evidence in self.evidence(requests, progress=progress)]

    @torch.no_grad()
    def evidence(
        self,
        requests: Sequence[Request],
        top_k: int = 0,
        extra_ids: Sequence[ExtraIds] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[TokenEvidence]:
        """One :class:`TokenEvidence` per request, from the same single pass that gives the log-probabilities.

        ``top_k`` asks for each position's likeliest tokens; ``extra_ids[i][t]`` (optional) lists token
        ids whose log-probabilities request ``i`` reports at its target position ``t``.
        """
        for i, (context, target) in enumerate(requests):
            if len(context) == 0 or len(target) == 0:
                raise ValueError(f"request {i}: context and target must both be non-empty token lists")
        if extra_ids is not None and len(extra_ids) != len(requests):
            raise ValueError(f"extra_ids has {len(extra_ids)} entries for {len(requests)} requests")
        extras = [tuple(map(tuple, extra_ids[i])) if extra_ids else () for i in range(len(requests))]
        for i, (rows, (_, target)) in enumerate(zip(extras, requests)):
            if rows and (len(rows) != len(target) or len({len(r) for r in rows}) != 1):
                raise ValueError(f"request {i}: extra_ids needs one equally long id list per target token")
        first_of: dict[tuple, int] = {}  # identical requests are computed once
        copies: dict[int, list[int]] = {}
        for i, (context, target) in enumerate(requests):
            first = first_of.setdefault((tuple(context), tuple(target), extras[i]), i)
            copies.setdefault(first, []).append(i)
        unique = list(copies)
        self._sequences = [list(requests[i][0]) + list(requests[i][1]) for i in unique]
        self._context_lengths = [len(requests[i][0]) for i in unique]
        self._top_k = top_k
        self._extra_ids = [extras[i] for i in unique]
        self._logprobs = [[0.0] * len(requests[i][1]) for i in unique]
        self._values = [
            _empty_evidence(len(requests[i][1]), top_k, len(extras[i][0]) if extras[i] else 0) for i in unique
        ]
        self._progress = (lambda done: progress(sum(len(copies[unique[j]]) for j in done))) if progress else None
        if self.share_prefixes:
            nodes = _prefix_tree(self._sequences)
        else:
            nodes = [_Node(s + [_END], 0, [j]) for j, s in enumerate(self._sequences)]
        self._run_level(nodes, parent=None)
        results: list[TokenEvidence | None] = [None] * len(requests)
        for j, first in enumerate(unique):
            self._values[j].logprobs = torch.tensor(self._logprobs[j])
            for i in copies[first]:
                results[i] = self._values[j]
        return results  # type: ignore[return-value]

    def _run_level(self, nodes: list[_Node], parent: _Parent | None) -> None:
        """Run ``nodes`` (children of ``parent``'s nodes, or top-level) in length-sorted batches, then their children."""
        # a row that ends where its parent ends has had every logit it needs already
        self._report([j for n in nodes if not n.runnable for j in n.requests])
        nodes = sorted((n for n in nodes if n.runnable), key=lambda n: len(n.runnable))
        # Shared runs never share a batch with leaves: a batch's cache is as wide as its longest row and
        # lives on through the children, so a short shared run batched with a long leaf would hand its
        # children that leaf's length of padding (memory, and attention over it).
        parents = [n for n in nodes if n.children]
        leaves = [n for n in nodes if not n.children]
        size = self.batch_size if self._pads_caches else 1  # no padding in caches under a sliding window
        for chunk in _batches(parents, size) + _batches(leaves, self.batch_size):
            self._run_batch(chunk, parent)

    def _run_batch(self, chunk: list[_Node], parent: _Parent | None) -> None:
        """Run ``chunk``'s nodes as one right-padded batch, in windows of columns; then their children."""
        device = self._device
        runs = [n.runnable for n in chunk]
        width = max(len(r) for r in runs)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in runs], device=device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in runs], device=device)
        positions = torch.tensor([n.start for n in chunk], device=device)[:, None] + torch.arange(width, device=device)
        needed = [
            (row, position - node.start, position, requests)  # (row, column, position, requests it predicts for)
            for row, (node, run) in enumerate(zip(chunk, runs))
            for position, requests in self._needed_positions(node, len(run)).items()
        ]
        windows = self._windows(width, len(chunk), sorted({column for _, column, _, _ in needed}))
        starts = [begin for begin, _ in windows]
        wanted: dict[int, list] = {}  # window's first column: (row, column in the window, position, requests)
        for row, column, position, requests in needed:
            begin = starts[bisect.bisect_right(starts, column) - 1]
            wanted.setdefault(begin, []).append((row, column - begin, position, requests))
        has_children = any(n.children for n in chunk)
        cache, past_mask = None, mask[:, :0]
        if parent is not None:
            owners = torch.tensor([parent.row_of[id(n)] for n in chunk], device=device)
            cache, past_mask = _selected_rows(parent.cache, owners), parent.mask[owners]
        for begin, end in windows:
            kwargs: dict[str, Any] = {
                "attention_mask": torch.cat([past_mask, mask[:, :end]], dim=1),
                "position_ids": positions[:, begin:end],
                "use_cache": has_children or end < width,
            }
            if cache is not None:
                kwargs["cache"] = cache
            here = wanted.get(begin, [])
            columns = sorted({column for _, column, _, _ in here})
            if self._can_trim_logits:
                kwargs["logits_to_keep"] = torch.tensor(columns or [end - begin - 1], device=device)
            output = self.model(input_ids=ids[:, begin:end], **kwargs)
            precision.check_finite(output.logits, self.model.dtype)  # an overflow is an error, not a NaN score
            cache = output.cache
            column_of = {c: k for k, c in enumerate(columns)} if self._can_trim_logits else {c: c for c in columns}
            self._collect(
                output.logits,
                [(row, column_of[column], position, requests) for row, column, position, requests in here],
            )
            del output  # the logits; only the cache lives on into the next window
        self._report([j for n in chunk if not n.children for j in n.requests])
        if has_children:
            row_of = {id(child): row for row, n in enumerate(chunk) for child in n.children}
            self._run_level([c for n in chunk for c in n.children], _Parent(cache, kwargs["attention_mask"], row_of))

    def _windows(self, width: int, rows: int, needed_columns: list[int]) -> list[tuple[int, int]]:
        """``(begin, end)`` column ranges covering ``width``: at most ``max_tokens_per_call`` positions each, and
        at most :data:`MAX_LOGITS` kept logit values (only the needed columns, where the model can trim)."""
        kept_columns = max(1, MAX_LOGITS // (rows * self._vocabulary))
        columns = max(1, self.max_tokens_per_call // rows)
        if not self._can_trim_logits:  # every column of a window comes back as logits
            columns, needed_columns = min(columns, kept_columns), []
        windows, begin = [], 0
        while begin < width:
            end = min(begin + columns, width)
            inside = needed_columns[bisect.bisect_left(needed_columns, begin) : bisect.bisect_left(needed_columns, end)]
            if len(inside) > kept_columns:
                end = inside[kept_columns - 1] + 1
            windows.append((begin, end))
            begin = end
        return windows

    def _needed_positions(self, node: _Node, length: int) -> dict[int, list[int]]:
        """Positions of the node whose logits predict a target token, with the requests needing each."""
        wanted: dict[int, list[int]] = {}
        end = node.start + length
        for j in node.requests:
            first = max(self._context_lengths[j] - 1, node.start)  # the last context token predicts the first target
            last = min(len(self._sequences[j]) - 1, end)
            for position in range(first, last):
                wanted.setdefault(position, []).append(j)
        return wanted

    def _collect(self, logits: torch.Tensor, picks: list[tuple[int, int, int, list[int]]]) -> None:
        """For each ``(row, column of logits, position, requests)``: every request's evidence at that position."""
        # log-softmax at the picked positions only (the logits also hold columns other rows asked for), a few
        # positions at a time: the copies a whole call's log-softmax makes would be two more tensors as large
        per_chunk = max(1, (MAX_LOGITS // 4) // self._vocabulary)
        for first in range(0, len(picks), per_chunk):
            chunk = picks[first : first + per_chunk]
            scores = logits[[p[0] for p in chunk], [p[1] for p in chunk]].float()
            normalizers = torch.logsumexp(scores, dim=-1)
            picked, tokens, places = [], [], []
            for k, (_, _, position, requests) in enumerate(chunk):
                for j in requests:
                    picked.append(k)
                    tokens.append(self._sequences[j][position + 1])
                    places.append((j, position + 1 - self._context_lengths[j]))
            for (j, t), value in zip(places, (scores[picked, tokens] - normalizers[picked]).tolist()):
                self._logprobs[j][t] = value
            if self._top_k or any(self._extra_ids[j] for j, _ in places):
                self._collect_beyond_target(scores, normalizers, picked, places)

    def _collect_beyond_target(self, scores, normalizers, picked: list[int], places: list[tuple[int, int]]) -> None:
        """The top tokens and the asked-for extra tokens' log-probabilities at each ``(request, target position)``."""
        top = scores.topk(self._top_k, dim=-1) if self._top_k else None
        for k, (j, t) in zip(picked, places):
            evidence = self._values[j]
            if top is not None:
                evidence.top_ids[t] = top.indices[k]
                evidence.top_logprobs[t] = top.values[k] - normalizers[k]
            if self._extra_ids[j]:
                evidence.extra_logprobs[t] = scores[k, list(self._extra_ids[j][t])] - normalizers[k]

    def _report(self, finished: list[int]) -> None:
        if self._progress and finished:
            self._progress(finished)
