"""Extractive answering with a causal LM: decode only a substring of the passage, or a no-answer.

A tiny LM asked a question about a passage happily invents an answer. Constraining the
decoder to the passage's own tokens turns it into an extractive QA model, which is what
Q² needs: its answers are compared token by token with spans of the response.

At each step a row may continue any token sequence that occurs contiguously in its
passage (given as token ids, tokenised exactly as the passage appears in the prompt), may
stop with ``end_id`` once it has emitted at least one token of such a sequence, or may
emit the ``no_answer_ids`` sequence followed by ``end_id``. Everything else gets ``-inf``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import LogitsProcessor


class SpanConstrainedLogitsProcessor(LogitsProcessor):
    """Allow only passage substrings (then ``end_id``) or ``no_answer_ids`` (then ``end_id``).

    ``passages[i]`` holds the passage token ids of batch item ``i``; with beam search the
    rows are ``num_beams`` consecutive copies of each item, as ``generate`` lays them out.
    ``prompt_length`` is the (left-padded) prompt width: what follows it is the answer.
    Rows that already emitted ``end_id`` are left untouched (``generate`` pads them).
    """

    def __init__(
        self,
        passages: Sequence[Sequence[int]],
        prompt_length: int,
        end_id: int,
        no_answer_ids: Sequence[int],
        num_beams: int = 1,
    ):
        if not no_answer_ids:
            raise ValueError("no_answer_ids must hold at least one token id")
        if any(len(p) == 0 for p in passages):
            raise ValueError("every passage needs at least one token; drop empty passages before decoding")
        self.passages = [list(p) for p in passages]
        self.prompt_length = prompt_length
        self.end_id = end_id
        self.no_answer_ids = list(no_answer_ids)
        self.num_beams = num_beams

    def allowed(self, passage: Sequence[int], emitted: Sequence[int]) -> set[int]:
        """The token ids that may follow ``emitted`` (the answer so far) for this passage."""
        k = len(emitted)
        allowed: set[int] = set()
        if k == 0:
            allowed.update(passage)
        else:
            # end positions p where passage[p-k+1 : p+1] == emitted
            ends = [p for p in range(k - 1, len(passage)) if passage[p - k + 1 : p + 1] == list(emitted)]
            if ends:
                allowed.add(self.end_id)
                allowed.update(passage[p + 1] for p in ends if p + 1 < len(passage))
        if k < len(self.no_answer_ids) and self.no_answer_ids[:k] == list(emitted):
            allowed.add(self.no_answer_ids[k])
        elif list(emitted) == self.no_answer_ids:
            allowed.add(self.end_id)
        return allowed

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        mask = torch.full_like(scores, float("-inf"))
        answers = input_ids[:, self.prompt_length :].tolist()
        for row, emitted in enumerate(answers):
            if self.end_id in emitted:  # finished: generate overwrites this row with padding
                mask[row] = 0
                continue
            allowed = self.allowed(self.passages[row // self.num_beams], emitted)
            mask[row, list(allowed)] = 0
        return scores + mask


__all__ = ["SpanConstrainedLogitsProcessor"]
