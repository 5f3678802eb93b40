"""Benchmark and training corpora, each read into faithkit's one row schema.

The benchmarks have their own readers (:mod:`.begin`, :mod:`.q2_wow`). The training corpora
go through one registry, :data:`CORPORA`:

    split = load_corpus("topicalchat", "valid_freq")    # a datasets.Dataset with declared features ...
    corpus_summary(split)["kept"], corpus_summary(split)["skipped_personal"]    # ... and what was kept, skipped

- ``topicalchat`` (:mod:`.topicalchat`): Topical-Chat, default folder ``data_root()/topicalchat``;
- ``faithdial`` (:mod:`.faithdial`): FaithDial, from the hub unless a folder is given;
- ``multidoc2dial`` (:mod:`.multidoc2dial`): MultiDoc2Dial, default folder ``data_root()/multidoc2dial``.

A row's history is the last ``history_turns`` turns before the response (2, as in the
PMI-FAITH paper; ``None`` keeps them all), as the plain text of each turn: who speaks is left
to the prompt template, which adds speaker prefixes if it wants them. The dataset's columns
are ``id``, ``document``, ``history`` (a sequence of strings), ``response``, ``gold`` (the same
text: the reference a generated response is compared with) and the corpus's own fields, each
declared in its loader's ``FEATURES``. Each load logs a one-line summary of what was kept and
skipped; the same counts travel with the dataset as JSON in ``info.description`` (they survive
``save_to_disk``), read back by :func:`corpus_summary`. :func:`export_corpus` writes a split as
JSONL, Parquet or a ``save_to_disk`` folder, which :func:`faithkit.data.read_rows` (every
``--input``) reads back unchanged.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable

from ...errors import ConfigError, OutputError
from ..files import replacing
from .. import data_root
from . import faithdial, multidoc2dial, topicalchat
from .common import corpus_summary

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Corpus:
    """A training corpus: its loader ``load(split, path, history_turns, **options)``, splits and where to get it."""

    load: Callable[..., datasets.Dataset]
    splits: tuple[str, ...]
    source: str
    folder: str | None  # default folder under data_root(); None reads from the hub

    @property
    def options(self) -> tuple[str, ...]:
        """The loader's keyword-only options (e.g. Topical-Chat's ``keep_personal``)."""
        parameters = inspect.signature(self.load).parameters.values()
        return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


CORPORA: dict[str, Corpus] = {
    "topicalchat": Corpus(topicalchat.load_topicalchat, topicalchat.SPLITS, topicalchat.SOURCE, "topicalchat"),
    "faithdial": Corpus(faithdial.load_faithdial, faithdial.SPLITS, faithdial.SOURCE, None),
    "multidoc2dial": Corpus(
        multidoc2dial.load_multidoc2dial, multidoc2dial.SPLITS, multidoc2dial.SOURCE, "multidoc2dial"
    ),
}


def load_corpus(
    name: str, split: str, path: str | Path | None = None, history_turns: int | None = 2, **options
) -> datasets.Dataset:
    """The rows of one split of a registered corpus, read from ``path`` (default: see :data:`CORPORA`)."""
    if name not in CORPORA:
        raise ConfigError(f"unknown corpus '{name}'; choose one of {', '.join(CORPORA)}")
    corpus = CORPORA[name]
    if split not in corpus.splits:
        raise ConfigError(f"{name} has no split '{split}'; choose one of {', '.join(corpus.splits)}")
    unknown = sorted(set(options) - set(corpus.options))
    if unknown:
        raise ConfigError(
            f"{name} has no option {', '.join(unknown)}; its options are {', '.join(corpus.options) or 'none'}"
        )
    if history_turns is not None and (
        isinstance(history_turns, bool) or not isinstance(history_turns, int) or history_turns < 0
    ):
        raise ConfigError(
            f"history_turns must be a whole number >= 0 (or None for the whole history), not {history_turns!r}"
        )
    if path is None and corpus.folder is not None:
        path = data_root() / corpus.folder
    dataset = corpus.load(split, path, history_turns, **options)
    summary = corpus_summary(dataset)
    skipped = ", ".join(
        f"{count} {key.removeprefix('skipped_')}" for key, count in summary.items() if key.startswith("skipped_")
    )
    logger.info(
        "%s %s: kept %d of %d turns (skipped: %s) from %s",
        name,
        split,
        summary["kept"],
        summary["turns"],
        skipped,
        summary["source"],
    )
    return dataset


EXPORT_FORMATS = ("jsonl", "parquet", "arrow")


def export_corpus(
    name: str,
    split: str,
    output: str | Path,
    path: str | Path | None = None,
    history_turns: int | None = 2,
    file_format: str = "jsonl",
    half: str | None = None,
    **options,
) -> dict:
    """Write one split as rows ``{"id", "document", "history", "response", "gold", **own fields}``; its summary.

    ``half`` (``dev`` or ``test``) keeps the rows of that half of the split's conversations only
    (:mod:`faithkit.data.halves`: stable, and the halves share no conversation).

    ``file_format`` is ``jsonl`` (one JSON object a line), ``parquet`` (one file) or ``arrow``
    (a ``save_to_disk`` folder, which keeps the summary too). The output is written whole
    beside its place and then moved there, so it is never half written.
    """
    if file_format not in EXPORT_FORMATS:
        raise ConfigError(f"unknown export format '{file_format}'; choose one of {', '.join(EXPORT_FORMATS)}")
    dataset = load_corpus(name, split, path, history_turns, **options)
    if half is not None:
        from ..halves import HALVES, conversation_of, half_of

        if half not in HALVES:
            raise ConfigError(f"--half {half!r} is unknown; choose one of {', '.join(HALVES)}")
        dataset = dataset.filter(lambda record: half_of(conversation_of(record)) == half)
    output = Path(output)
    partial = output.with_name(output.name + ".partial")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        _remove(partial)
        if file_format == "jsonl":
            with replacing(partial) as file:
                for record in dataset:
                    file.write(json.dumps(record, allow_nan=False) + "\n")  # ASCII: no line separator inside a record
        elif file_format == "parquet":
            dataset.to_parquet(str(partial))
        else:
            dataset.save_to_disk(str(partial))
        _remove(output)
        os.replace(partial, output)
    except OSError as error:
        with contextlib.suppress(OSError):
            _remove(partial)
        raise OutputError(f"cannot write {output}: {error.strerror or error}; choose another output") from None
    summary = {**corpus_summary(dataset), "output": str(output), "format": file_format}
    return {**summary, "half": half, "half_rows": len(dataset)} if half is not None else summary


def _remove(path: Path) -> None:
    """Delete a file or a folder if it exists."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


__all__ = ["CORPORA", "EXPORT_FORMATS", "Corpus", "corpus_summary", "export_corpus", "load_corpus"]
