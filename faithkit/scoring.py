"""Log-probabilities of target tokens after contexts, computed without repeated work.

Every LM-based score in faithkit reduces to: for many ``(context_ids, target_ids)``
pairs, the log-probability of each target token. Two things make that fast on real
workloads while leaving the numbers unchanged:

* **shared prefixes** — rows that start with the same tokens (one document under many
  histories, one context under many candidate responses) run that prefix once; its
  key/value cache is then expanded across the rows, which only run their own suffixes;
* **length bucketing** — the remaining rows are batched with rows of similar length and
  right-padded, so causal attention never sees padding and little compute is wasted.

:func:`reference_token_logprobs` is the slow, obviously-correct definition (one unpadded
pass per pair) that the fast path is tested against.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

Request = tuple[Sequence[int], Sequence[int]]

MIN_SHARED_PREFIX = 16
"""Rows with different contexts share a cached prefix only when it is at least this many tokens
(rows with the same context always may): a shorter common start would split a group's longer prefix."""

MIN_SAVED_TOKENS = 32
"""A shared prefix costs one extra, small forward call; it must save at least this many tokens of compute."""


@torch.no_grad()
def reference_token_logprobs(model, context_ids: Sequence[int], target_ids: Sequence[int]) -> torch.Tensor:
    """log P(target_t | context, target_<t) for each t, from one full unpadded forward pass."""
    ids = torch.tensor([list(context_ids) + list(target_ids)], device=model.device)
    logits = model(input_ids=ids, use_cache=False).logits[0].float()
    start = len(context_ids)
    logprobs = torch.log_softmax(logits[start - 1 : ids.shape[1] - 1], dim=-1)
    return logprobs.gather(-1, ids[0, start:, None]).squeeze(-1).cpu()


@dataclass
class _Group:
    prefix_length: int
    members: list[int]


def _common_prefix_length(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = 0
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def _group_by_prefix(sequences: list[list[int]], context_lengths: list[int], min_shared: int) -> list[_Group]:
    """Group rows that share at least ``min_shared`` leading tokens (within their contexts), or all of a short context."""
    order = sorted(range(len(sequences)), key=lambda i: sequences[i])
    groups: list[_Group] = []
    for index in order:
        if groups:
            group = groups[-1]
            head = sequences[group.members[0]]
            limit = min(group.prefix_length, context_lengths[index])
            shared = _common_prefix_length(head, sequences[index], limit)
            same_context = shared == group.prefix_length == context_lengths[index]  # e.g. one short history
            if shared >= min_shared or same_context:
                group.prefix_length = shared
                group.members.append(index)
                continue
        groups.append(_Group(prefix_length=context_lengths[index], members=[index]))
    return groups


def _selected_rows(cache, rows: torch.Tensor):
    """A new cache holding ``rows`` of ``cache``; the shared prefix cache itself stays untouched.

    Selecting rows indexes into new tensors, and layers extend their tensors by concatenation,
    so copying the layer objects (not their tensors, as a deep copy would) is enough.
    """
    selected = copy.copy(cache)
    selected.layers = [copy.copy(layer) for layer in cache.layers]
    selected.batch_select_indices(rows)
    return selected


class TokenScorer:
    """Batched, prefix-sharing computation of target-token log-probabilities for one causal LM."""

    def __init__(self, model, batch_size: int = 8, share_prefixes: bool = True, min_shared: int = MIN_SHARED_PREFIX):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.share_prefixes = share_prefixes
        self.min_shared = min_shared
        self._can_trim_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
        # Padded prefixes of different lengths in one batch are exact under full attention; a sliding
        # window counts cache slots, padding included, so such models run one prefix per batch.
        self._mixes_prefixes = not any("sliding" in t for t in getattr(model.config, "layer_types", None) or [])

    @torch.no_grad()
    def __call__(self, requests: Sequence[Request], progress: Callable[[int], None] | None = None) -> list[torch.Tensor]:
        """One tensor of per-token log-probabilities per request; ``progress(n)`` is told as rows finish."""
        for i, (context, target) in enumerate(requests):
            if len(context) == 0 or len(target) == 0:
                raise ValueError(f"request {i}: context and target must both be non-empty token lists")
        sequences = [list(c) + list(t) for c, t in requests]
        context_lengths = [len(c) for c, _ in requests]
        results: list[torch.Tensor | None] = [None] * len(requests)
        singles: list[int] = []
        shared: list[_Group] = []
        groups = _group_by_prefix(sequences, context_lengths, self.min_shared) if self.share_prefixes else []
        for group in groups:
            if (len(group.members) - 1) * group.prefix_length < MIN_SAVED_TOKENS:
                singles.extend(group.members)
            else:
                shared.append(group)
        if not self.share_prefixes:
            singles = list(range(len(requests)))
        shared.sort(key=lambda g: g.prefix_length)
        step = self.batch_size if self._mixes_prefixes else 1
        for start in range(0, len(shared), step):
            self._run_shared_prefixes(shared[start : start + step], sequences, context_lengths, results, progress)
        singles.sort(key=lambda i: len(sequences[i]))
        for start in range(0, len(singles), self.batch_size):
            chunk = singles[start : start + self.batch_size]
            self._run_batch(chunk, sequences, context_lengths, [0] * len(chunk), results)
            if progress:
                progress(len(chunk))
        return results  # type: ignore[return-value]

    def _run_shared_prefixes(self, groups: list[_Group], sequences, context_lengths, results, progress):
        """Run the groups' prefixes in one padded pass, then their members' suffixes in batches over that cache."""
        lengths = [g.prefix_length for g in groups]
        width = max(lengths)
        ids = torch.tensor([sequences[g.members[0]][:n] + [0] * (width - n) for g, n in zip(groups, lengths)],
                           device=self.model.device)
        mask = torch.tensor([[1] * n + [0] * (width - n) for n in lengths], device=self.model.device)
        last = sorted(set(n - 1 for n in lengths))
        keep = {"logits_to_keep": torch.tensor(last, device=self.model.device)} if self._can_trim_logits else {}
        output = self.model(input_ids=ids, attention_mask=mask, use_cache=True, **keep)
        column = {position: i for i, position in enumerate(last)} if keep else {p: p for p in last}
        last_logits = [output.logits[g, column[n - 1]].float() for g, n in enumerate(lengths)]
        members = sorted(((g, i) for g, group in enumerate(groups) for i in group.members),
                         key=lambda item: len(sequences[item[1]]) - lengths[item[0]])
        for start in range(0, len(members), self.batch_size):
            chunk = members[start : start + self.batch_size]
            owners = [g for g, _ in chunk]
            cache = _selected_rows(output.cache, torch.tensor(owners, device=self.model.device))
            self._run_batch([i for _, i in chunk], sequences, context_lengths, [lengths[g] for g in owners], results,
                            cache=cache, prefix_mask=mask[owners], last_logits=[last_logits[g] for g in owners])
            if progress:
                progress(len(chunk))

    def _keep(self, n: int) -> dict:
        return {"logits_to_keep": n} if self._can_trim_logits else {}

    def _run_batch(self, chunk, sequences, context_lengths, prefix_lengths, results,
                   cache=None, prefix_mask=None, last_logits=None):
        """Run the rows' suffixes (after their cached prefixes), right-padded, and collect target log-probs.

        Cached prefixes of different lengths are right-padded too: the attention mask hides the
        padding and explicit position ids continue each row from its own prefix length.
        """
        suffixes = [sequences[i][n:] for i, n in zip(chunk, prefix_lengths)]
        width = max(len(s) for s in suffixes)
        device = self.model.device
        ids = torch.tensor([s + [0] * (width - len(s)) for s in suffixes], device=device)
        # logits are needed from the position before each row's first target token onwards
        first_needed = min(max(context_lengths[i] - 1 - n, 0) for i, n in zip(chunk, prefix_lengths))
        keep = width - first_needed
        kwargs = {"use_cache": False}
        if cache is not None:
            suffix_mask = torch.ones(len(chunk), width, dtype=prefix_mask.dtype, device=device)
            positions = torch.tensor(prefix_lengths, device=device)[:, None] + torch.arange(width, device=device)
            kwargs = {"cache": cache, "use_cache": True, "attention_mask": torch.cat([prefix_mask, suffix_mask], dim=1),
                      "position_ids": positions}
        logits = self.model(input_ids=ids, **kwargs, **self._keep(keep)).logits
        if logits.shape[1] != keep:  # the model ignored logits_to_keep
            logits = logits[:, -keep:]
        for row, (index, prefix_length) in enumerate(zip(chunk, prefix_lengths)):
            sequence, context_length = sequences[index], context_lengths[index]
            offset = prefix_length + first_needed  # absolute position of this row's logits[row, 0]
            positions = torch.arange(context_length - 1, len(sequence) - 1, device=logits.device)
            row_logits = logits[row, (positions - offset).clamp(min=0)].float()
            if context_length - 1 < offset:  # first target predicted by the cached prefix's last position
                row_logits[0] = last_logits[row]
            targets = torch.tensor(sequence[context_length:], device=logits.device)
            logprobs = torch.log_softmax(row_logits, dim=-1).gather(-1, targets[:, None]).squeeze(-1)
            results[index] = logprobs.cpu()
