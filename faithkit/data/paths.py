"""What each path option must be, checked when the command line is read, so a wrong path is one error line.

Every option that names a file or folder is declared with one of the :class:`PathArg` kinds
below as its argparse ``type``; the command-line tests walk the parser for them and try each
with the mistakes a user makes (missing, a folder, a file where a folder goes, binary or
non-UTF-8 bytes, a place that refuses new files).
"""

from __future__ import annotations

import argparse
import codecs
import json
from pathlib import Path

from .results import check_writable
from ..errors import ModelNotAvailableError

SNIFF_BYTES = 1 << 20
"""How much of an input file is read up front to tell text from binary."""


class PathArg:
    """argparse ``type`` for a path option of one ``kind``; returns the text, or fails with what is wrong.

    With ``unset``, ``none`` (or ``null``) stands for no path and gives None.
    """

    KINDS = {
        "rows": "rows file (.jsonl, .csv, .tsv or .parquet) or saved dataset",
        "text": "UTF-8 text file",
        "input folder": "folder",
        "output file": "file to write",
        "output": "file or folder to write",
        "output folder": "folder to write into",
        "model": "model (a folder, a hub id or an offline name)",
    }

    def __init__(self, kind: str, unset: bool = False):
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {sorted(self.KINDS)}, got {kind!r}")
        self.kind, self.unset = kind, unset
        self.__name__ = kind  # argparse names the type in its messages

    def __call__(self, text: str) -> str | None:
        if self.unset and text.lower() in ("none", "null"):
            return None
        try:
            check_path(self.kind, Path(text))
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text

    def __repr__(self) -> str:
        return f"PathArg({self.kind!r})"


def check_path(kind: str, path: Path) -> None:
    """Raise ValueError naming the problem when ``path`` cannot be what a ``kind`` option needs."""
    if kind == "model":
        _check_model(path)
    elif kind == "rows" and _is_dataset_source(path):
        if path.suffix.lower() == ".parquet" and not path.is_file():
            raise ValueError(
                f"file not found: {path}" if not path.exists() else f"{path} is a folder; give a Parquet file"
            )
    elif kind in ("rows", "text"):
        if not path.exists():
            raise ValueError(f"file not found: {path}")
        if path.is_dir():
            raise ValueError(f"{path} is a folder; give a {PathArg.KINDS[kind]}")
        _check_text(path, strict=kind == "text")
    elif kind == "input folder":
        if not path.exists():
            raise ValueError(f"folder not found: {path}")
        if not path.is_dir():
            raise ValueError(f"{path} is a file; give a folder")
    elif kind == "output":
        check_writable(path, path.parent)
    elif kind == "output file":
        if path.is_dir():
            raise ValueError(f"{path} is a folder; give a file name")
        check_writable(path, path.parent)
    else:  # output folder
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is a file; give a folder (a new one is created)")
        check_writable(path, path)


def _is_dataset_source(path: Path) -> bool:
    """A hub dataset (hf:…), a Parquet file or a save_to_disk folder: rows that are not text (see faithkit.data.arrow)."""
    from .arrow import is_dataset_source

    return is_dataset_source(str(path))


def _check_text(path: Path, strict: bool) -> None:
    """Binary bytes (a NUL) are never a rows or text file; a text file must also be UTF-8 (rows files keep
    undecodable bytes as per-row errors instead, see :func:`faithkit.data.read_rows`)."""
    with open(path, "rb") as file:
        head = file.read(SNIFF_BYTES)
    if b"\0" in head:
        raise ValueError(f"{path} holds binary data, not a {PathArg.KINDS['rows' if not strict else 'text']}")
    if strict:
        try:
            codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < SNIFF_BYTES)
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not UTF-8 text (byte {error.start}); save it as UTF-8") from None


def _check_model(path: Path) -> None:
    try:
        check_model_folder(str(path))
    except ModelNotAvailableError as error:
        raise ValueError(str(error)) from None


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def check_model_folder(name: str) -> None:
    """A local folder must hold a model's config, weights and tokenizer; otherwise one ModelNotAvailableError
    naming what is missing, before any row runs (hub ids and offline names are left to
    :func:`faithkit.serving.models.load`)."""
    folder = Path(name).expanduser()
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ModelNotAvailableError(
            f"model {folder} is a file; give a model folder (with config.json, weights "
            f"and tokenizer files), a hub id or an offline name"
        )
    files = {path.name for path in folder.iterdir()}
    missing = [
        what
        for what, present in (
            ("config.json", "config.json" in files),
            (
                f"weights ({', '.join('*' + s for s in WEIGHT_SUFFIXES[:3])})",
                any(Path(f).suffix in WEIGHT_SUFFIXES for f in files),
            ),
            (f"tokenizer files ({', '.join(TOKENIZER_FILES[:3])}, ...)", any(f in files for f in TOKENIZER_FILES)),
        )
        if not present
    ]
    if missing:
        raise ModelNotAvailableError(
            f"{folder} is not a model folder: it has no {' and no '.join(missing)}; "
            f"give a folder written by save_pretrained (model and tokenizer), a hub id "
            f"or an offline name"
        )
    check_safetensors_files(folder)


def check_safetensors_files(folder: Path) -> None:
    """Every ``*.safetensors`` file of ``folder`` whole, or one ModelNotAvailableError naming the file (a copy cut
    short fails here, in a second, not deep inside the safetensors library)."""
    for path in sorted(folder.glob("*.safetensors")):
        problem = safetensors_problem(path)
        if problem is not None:
            raise ModelNotAvailableError(
                f"{path} is no whole safetensors file: {problem}; copy or save the model folder {folder} again"
            )


def safetensors_problem(path: Path) -> str | None:
    """Why ``path`` is no whole safetensors file (a header that is cut or not JSON, tensors past its end), or None.
    Reads the header only."""
    size = path.stat().st_size
    with open(path, "rb") as file:
        head = file.read(8)
        if len(head) < 8:
            return f"it holds {size} bytes, fewer than a safetensors header's"
        length = int.from_bytes(head, "little")
        if length > size - 8:
            return f"its header says {length:,} bytes of index, and the file holds {size:,} bytes: it was cut short"
        try:
            index = json.loads(file.read(length))
            ends = [entry["data_offsets"][1] for key, entry in index.items() if key != "__metadata__"]
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return "its header is not a safetensors index"
    needed = 8 + length + max(ends, default=0)
    if needed > size:
        return f"its tensors end at byte {needed:,}, and the file holds {size:,} bytes: it was cut short"
    return None
