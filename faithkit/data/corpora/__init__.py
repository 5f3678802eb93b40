"""Benchmark and training corpora, each read into faithkit's one row schema.

The benchmarks have their own readers (:mod:`.begin`, :mod:`.q2_wow`). The training corpora
go through one registry, :data:`CORPORA`::

    rows = load_corpus("topicalchat", "valid_freq")    # a CorpusSplit: a list of Row ...
    rows.summary["kept"], rows.summary["skipped_personal"]    # ... and what was kept and skipped

- ``topicalchat`` (:mod:`.topicalchat`): Topical-Chat, default folder ``data_root()/topicalchat``;
- ``faithdial`` (:mod:`.faithdial`): FaithDial, from the hub unless a folder is given;
- ``multidoc2dial`` (:mod:`.multidoc2dial`): MultiDoc2Dial, default folder ``data_root()/multidoc2dial``.

A row's history is the last ``history_turns`` turns before the response (2, as in the
PMI-FAITH paper; ``None`` keeps them all), as the plain text of each turn: who speaks is left
to the prompt template, which adds speaker prefixes if it wants them. Each load logs a
one-line summary of what was kept and skipped; the same counts are ``.summary`` of the
returned :class:`CorpusSplit`. :func:`export_corpus` writes a split as JSONL rows that
:func:`faithkit.data.read_rows` reads back unchanged.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ConfigError, OutputError
from .. import data_root
from . import faithdial, multidoc2dial, topicalchat
from .common import CorpusSplit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Corpus:
    """A training corpus: its loader ``load(split, path, history_turns, **options)``, splits and where to get it."""

    load: Callable[..., CorpusSplit]
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
    "multidoc2dial": Corpus(multidoc2dial.load_multidoc2dial, multidoc2dial.SPLITS, multidoc2dial.SOURCE,
                            "multidoc2dial"),
}


def load_corpus(name: str, split: str, path: str | Path | None = None, history_turns: int | None = 2,
                **options) -> CorpusSplit:
    """The rows of one split of a registered corpus, read from ``path`` (default: see :data:`CORPORA`)."""
    if name not in CORPORA:
        raise ConfigError(f"unknown corpus '{name}'; choose one of {', '.join(CORPORA)}")
    corpus = CORPORA[name]
    if split not in corpus.splits:
        raise ConfigError(f"{name} has no split '{split}'; choose one of {', '.join(corpus.splits)}")
    unknown = sorted(set(options) - set(corpus.options))
    if unknown:
        raise ConfigError(f"{name} has no option {', '.join(unknown)}; "
                          f"its options are {', '.join(corpus.options) or 'none'}")
    if history_turns is not None and (isinstance(history_turns, bool) or not isinstance(history_turns, int)
                                      or history_turns < 0):
        raise ConfigError(f"history_turns must be a whole number >= 0 (or None for the whole history), "
                          f"not {history_turns!r}")
    if path is None and corpus.folder is not None:
        path = data_root() / corpus.folder
    rows = corpus.load(split, path, history_turns, **options)
    skipped = ", ".join(f"{count} {key.removeprefix('skipped_')}" for key, count in rows.summary.items()
                        if key.startswith("skipped_"))
    logger.info("%s %s: kept %d of %d turns (skipped: %s) from %s", name, split, rows.summary["kept"],
                rows.summary["turns"], skipped, rows.summary["source"])
    return rows


def export_corpus(name: str, split: str, output: str | Path, path: str | Path | None = None,
                  history_turns: int | None = 2, **options) -> dict:
    """Write one split as JSONL rows ``{"id", "document", "history", "response", "gold", **extras}``; its summary.

    ``gold`` repeats the response: the corpus turn is the reference a generated response is
    compared with. The file is written whole or not at all.
    """
    rows = load_corpus(name, split, path, history_turns, **options)
    output = Path(output)
    partial = output.with_name(output.name + ".partial")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("w", encoding="utf-8") as file:
            for row in rows:
                record = {"id": row.id, "document": row.document, "history": row.history,
                          "response": row.response, "gold": row.response, **row.extras}
                file.write(json.dumps(record) + "\n")  # ASCII: no line separator inside a record
        os.replace(partial, output)
    except OSError as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise OutputError(f"cannot write {output}: {error.strerror or error}; choose another output") from None
    return {**rows.summary, "output": str(output)}


__all__ = ["CORPORA", "Corpus", "CorpusSplit", "export_corpus", "load_corpus"]
