"""Training rows in, token ids out: the same views decoding and PMI-FAITH use, cut to fit.

A causal LM reads the context then the response and learns only the response (and the end
of sequence): labels are -100 over the context. A seq2seq model's encoder reads the context
and its decoder learns the response. Contexts come from
:meth:`faithkit.prompts.PromptTemplate.view`, so an over-long document is cut exactly as at
decoding and scoring time. Tokenization goes through ``datasets``' ``Dataset.map`` and its
cache (:func:`encode_rows`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import prompts
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
    columns = Columns(required=("document", "response"), naming="Rename that column to one of those names.")
    if path:
        source = path
        rows = list(read_rows(path, columns, split=named_split if has_splits(path) else None))
    else:
        from ..data.corpora import load_corpus

        assert section.corpus, "the config check requires data.corpus or data.train_file"
        source = f"corpus {section.corpus} split {named_split}"
        dataset = load_corpus(
            section.corpus, named_split, path=section.corpus_path, history_turns=section.history_turns
        )
        rows = list(read_rows(dataset, columns))
    bad = [row for row in rows if row.error]
    if bad:
        logger.warning(
            "%s: %d of %d rows cannot be used and are left out (first: %s)", source, len(bad), len(rows), bad[0].error
        )
    rows = [row for row in rows if not row.error][:limit]
    if not rows:
        raise InputError(f"{source} has no usable {split} rows")
    for row in rows:
        row.history = row.history[-section.history_turns :] if section.history_turns else []
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
    num_proc: int | None = None,
):
    """``(dataset, stats)``: a ``datasets.Dataset`` of ``{"input_ids", "labels"}`` per row that fits, cached.

    Contexts are cut to fit (document first), responses to ``max_response_length``. A row
    whose history alone is too long for the room left (chat templates cannot cut a turn) is
    left out and counted in ``stats.dropped``. The tokenization runs through ``Dataset.map``
    (``num_proc`` processes) into a cache file named by a fingerprint of the rows, the tokenizer, the template,
    the lengths and the code of this module and of :mod:`faithkit.prompts`: a rerun reads it instead.
    """
    import datasets

    if tokenizer.eos_token_id is None:
        raise ConfigError(
            "the tokenizer has no end-of-sequence token, so responses could not end; use a tokenizer with one"
        )
    views = ("document", "history", "response")
    table = datasets.Dataset.from_dict({view: [getattr(row, view) for row in rows] for view in views})
    options = dict(
        tokenizer=tokenizer,
        template=template,
        seq2seq=seq2seq,
        max_length=max_length,
        max_response_length=max_response_length,
    )
    cache, fingerprint = _cache_of(table, options)
    if any(cache.glob(f"{fingerprint}*.arrow")):  # one file, or one per process with num_proc
        logger.info("%d rows: tokenized ids read from the cache (%s)", len(rows), cache / fingerprint)
    encoded = table.map(
        encode_example,
        fn_kwargs=options,
        remove_columns=table.column_names,
        num_proc=num_proc,
        cache_file_name=str(cache / f"{fingerprint}.arrow"),
        new_fingerprint=fingerprint,
        desc="tokenizing",
    )
    fits = list(encoded["fits"])
    cut = (sum(encoded["context_cut"]), sum(encoded["response_cut"]))
    stats = EncodingStats(rows=len(rows), contexts_cut=cut[0], responses_cut=cut[1], dropped=fits.count(False))
    kept = [index for index, fitting in enumerate(fits) if fitting]
    return encoded.select(kept).select_columns(["input_ids", "labels"]), stats


def _cache_of(table, options: dict) -> tuple[Path, str]:
    """The cache folder of tokenized rows (created), and the fingerprint that names this table's file there: a hash
    of the rows, the options and the code of this module and of :mod:`faithkit.prompts`."""
    import datasets
    from datasets.fingerprint import Hasher

    code = [Path(file).read_bytes() for file in (prompts.__file__, __file__) if file]  # what the ids follow
    cache = Path(datasets.config.HF_DATASETS_CACHE) / "faithkit_train"
    cache.mkdir(parents=True, exist_ok=True)
    return cache, Hasher.hash([table._fingerprint, code, options])


def encode_example(
    row: dict, tokenizer, template: PromptTemplate, seq2seq: bool, max_length: int, max_response_length: int
) -> dict:
    """One row's ``input_ids`` and ``labels`` (-100 over a causal LM's context), and what fitting it cost."""
    eos = tokenizer.eos_token_id
    label_start = start_ids(tokenizer) if seq2seq else []  # BART's labels begin with <s>, as its pretraining did
    response = template.response_ids(tokenizer, row["response"])
    response_cut = len(response) > max_response_length
    target = label_start + response[:max_response_length] + [eos]
    budget = max_length if seq2seq else max_length - len(target)
    try:
        context = template.view(tokenizer, row["document"], row["history"], max_tokens=budget, encoder=seq2seq)
    except ValueError:
        return {"input_ids": [], "labels": [], "context_cut": False, "response_cut": response_cut, "fits": False}
    if seq2seq:
        input_ids, labels = context.ids, target
    else:
        input_ids, labels = context.ids + target, [IGNORE] * len(context.ids) + target
    return {
        "input_ids": input_ids,
        "labels": labels,
        "context_cut": context.truncated_tokens > 0,
        "response_cut": response_cut,
        "fits": True,
    }


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
