"""Training rows in, token ids out: the same views decoding and PMI-FAITH use, cut to fit.

A causal LM reads the context then the response and learns only the response (and the end
of sequence): labels are -100 over the context. A seq2seq model's encoder reads the context
and its decoder learns the response. Contexts come from
:meth:`faithkit.prompts.PromptTemplate.view`, so an over-long document is cut exactly as at
decoding and scoring time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from ..data import Columns, Row, read_rows
from ..data.arrow import has_splits
from ..errors import ConfigError, InputError
from ..prompts import PromptTemplate, start_ids
from .config import DataSection

logger = logging.getLogger(__name__)

IGNORE = -100


def load_rows(section: DataSection, split: str) -> list[Row]:
    """The ``"train"`` or ``"dev"`` rows the config names, limited and with at most ``history_turns`` turns each.

    Rows a file marks as unusable (an empty document or response, a broken line) are left
    out with a warning that counts them.
    """
    limit = section.max_train_rows if split == "train" else section.max_dev_rows
    path = section.train_file if split == "train" else section.dev_file
    named_split = section.train_split if split == "train" else section.dev_split
    if path:
        source = path
        rows = list(read_rows(path, Columns(required=("document", "response")),
                              split=named_split if has_splits(path) else None))
    else:
        from ..data.corpora import load_corpus

        source = f"corpus {section.corpus} split {named_split}"
        dataset = load_corpus(section.corpus, named_split, path=section.corpus_path,
                              history_turns=section.history_turns)
        rows = list(read_rows(dataset, Columns(required=("document", "response"))))
    bad = [row for row in rows if row.error]
    if bad:
        logger.warning("%s: %d of %d rows cannot be used and are left out (first: %s)",
                       source, len(bad), len(rows), bad[0].error)
    rows = [row for row in rows if not row.error][:limit]
    if not rows:
        raise InputError(f"{source} has no usable {split} rows")
    for row in rows:
        row.history = row.history[-section.history_turns:] if section.history_turns else []
    return rows


@dataclass
class EncodingStats:
    """What fitting the rows into ``max_length`` cost, for the log."""

    rows: int = 0
    contexts_cut: int = 0
    responses_cut: int = 0
    dropped: int = 0  # rows whose context cannot fit even without its document


def encode_rows(
    rows: list[Row],
    tokenizer,
    template: PromptTemplate,
    seq2seq: bool,
    max_length: int,
    max_response_length: int,
) -> tuple[list[dict], EncodingStats]:
    """``{"input_ids", "labels"}`` per row; contexts are cut to fit (document first), responses to ``max_response_length``.

    A row whose history alone is too long for the room left (chat templates cannot cut a
    turn) is left out and counted in ``stats.dropped``.
    """
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ConfigError("the tokenizer has no end-of-sequence token, so responses could not end; "
                          "use a tokenizer with one")
    label_start = start_ids(tokenizer) if seq2seq else []  # BART's labels begin with <s>, as its pretraining did
    stats = EncodingStats(rows=len(rows))
    examples = []
    for row in rows:
        response = template.response_ids(tokenizer, row.response)
        if len(response) > max_response_length:
            stats.responses_cut += 1
            response = response[:max_response_length]
        target = label_start + response + [eos]
        budget = max_length if seq2seq else max_length - len(target)
        try:
            context = template.view(tokenizer, row.document, row.history, max_tokens=budget, encoder=seq2seq)
        except ValueError:
            stats.dropped += 1
            continue
        stats.contexts_cut += context.truncated_tokens > 0
        if seq2seq:
            examples.append({"input_ids": context.ids, "labels": target})
        else:
            examples.append({"input_ids": context.ids + target, "labels": [IGNORE] * len(context.ids) + target})
    return examples, stats


class Collator:
    """Right-pads a list of examples into tensors; seq2seq batches also get the decoder's inputs (labels shifted right)."""

    def __init__(self, pad_token_id: int, decoder_start_token_id: int | None = None):
        self.pad = pad_token_id
        self.decoder_start = decoder_start_token_id

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        batch = {
            "input_ids": _pad([e["input_ids"] for e in examples], self.pad),
            "attention_mask": _pad([[1] * len(e["input_ids"]) for e in examples], 0),
            "labels": _pad([e["labels"] for e in examples], IGNORE),
        }
        if self.decoder_start is not None:
            shifted = [[self.decoder_start] + e["labels"][:-1] for e in examples]
            batch["decoder_input_ids"] = _pad(shifted, self.pad)  # causal attention never reaches the right padding
        return batch


def _pad(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([row + [value] * (width - len(row)) for row in rows])
