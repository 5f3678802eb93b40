"""Inputs held by ``datasets``: a Parquet file, a ``save_to_disk`` folder, a hub dataset ``hf:OWNER/NAME``,
or a ``datasets.Dataset`` itself (as :func:`faithkit.data.corpora.load_corpus` returns).

:func:`faithkit.data.read_rows` sends these here and reads their records exactly as it reads
JSONL lines: the same column names, the same row errors, and the same ids (the row's number
from 1 when it has no id, as a JSONL line's number would be). A saved ``DatasetDict`` folder
and a hub dataset hold several splits, so they need ``split``; a Parquet file or a saved
``Dataset`` is one split already.
"""

from __future__ import annotations

import sys
from pathlib import Path
from collections.abc import Iterator

from ..errors import InputError

HUB_PREFIX = "hf:"


def is_dataset_source(source) -> bool:
    """Whether ``source`` is a ``datasets.Dataset`` or names a hub dataset, a Parquet file or a saved dataset."""
    if _is_dataset(source):
        return True
    text = str(source)
    if text.startswith(HUB_PREFIX):
        return True
    path = Path(source)
    return path.suffix.lower() == ".parquet" or _is_saved_dataset(path) or _is_saved_dict(path)


def has_splits(source) -> bool:
    """Whether ``source`` holds several splits (a hub dataset or a saved ``DatasetDict``), so a split must be named."""
    if _is_dataset(source):
        return False
    return str(source).startswith(HUB_PREFIX) or _is_saved_dict(Path(source))


def _is_dataset(source) -> bool:
    datasets = sys.modules.get("datasets")  # not imported yet: source cannot be one of its datasets
    return datasets is not None and isinstance(source, datasets.Dataset)


def _is_saved_dataset(path: Path) -> bool:
    return (path / "dataset_info.json").is_file() and (path / "state.json").is_file()


def _is_saved_dict(path: Path) -> bool:
    return (path / "dataset_dict.json").is_file()


def load_dataset_source(source, split: str | None = None):
    """The ``datasets.Dataset`` ``source`` names (one split of it where it has several); else an InputError."""
    import datasets

    if isinstance(source, datasets.Dataset):
        return source
    text = str(source)
    if split is not None and not has_splits(source):
        raise InputError(
            f"{text} is a single split already; drop --split (it applies to hub datasets and saved DatasetDict folders)"
        )
    if text.startswith(HUB_PREFIX):
        return _hub_split(text.removeprefix(HUB_PREFIX), split)
    path = Path(source)
    if path.suffix.lower() == ".parquet":
        if not path.is_file():
            raise InputError(f"input file not found: {path}")
        try:
            return datasets.Dataset.from_parquet(str(path))
        except Exception as error:  # pyarrow's errors have no common base beyond ArrowException/OSError
            raise InputError(f"{path} is not a readable Parquet file ({type(error).__name__}: {error})") from None
    saved = datasets.load_from_disk(str(path))
    if isinstance(saved, datasets.DatasetDict):
        if split is None or split not in saved:
            wanted = "name one with --split" if split is None else f"it has no split '{split}'"
            raise InputError(f"{path} holds the splits {', '.join(saved)}; {wanted}")
        return saved[split]
    return saved


def _hub_split(name: str, split: str | None):
    import datasets

    if split is None:
        raise InputError(f"hub dataset {name}: name the split with --split (e.g. --split test)")
    try:
        return datasets.load_dataset(name, split=split)
    except Exception as error:  # offline, unknown id, unknown split: datasets raises many kinds
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(
            f"cannot load split '{split}' of the hub dataset {name} ({type(error).__name__}: {reason}); "
            f"check the id, the split and the network, or save it with save_to_disk and pass "
            f"the folder"
        ) from None


def dataset_records(source, split: str | None = None) -> Iterator[tuple[int, int, dict, None]]:
    """``(row number, row number, record, None)`` for each row, in the shape of :mod:`.rows`' JSONL records."""
    dataset = load_dataset_source(source, split)
    for number, record in enumerate(dataset, start=1):
        yield number, number, record, None
