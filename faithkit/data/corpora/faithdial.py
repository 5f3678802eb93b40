"""FaithDial (Dziri et al., TACL 2022): Wizard-of-Wikipedia responses edited to be faithful to their knowledge.

The released files are JSON lists of dialogues, ``[{"utterances": [{"history": [...],
"speaker", "knowledge", "original_response", "response", "BEGIN": [...], "VRM": [...]},
...]}, ...]``, one per split: ``train``, ``valid`` (with its ``valid_random_split`` /
``valid_topic_split`` halves: seen / unseen WoW topics), ``test`` (``test_random_split`` /
``test_topic_split``). Every utterance is a wizard response, so every one is a row.

Without a ``path`` the split's file is downloaded from the hub dataset McGill-NLP/FaithDial
(``data/<split>.json``, cached by huggingface_hub). The files are read directly rather than
through ``datasets.load_dataset``: that repository is script-based, which ``datasets`` no
longer runs, and reading the same JSON keeps one parser for the hub and a local folder
(``<folder>/<split>.json`` or, in a clone of the hub repository, ``<folder>/data/<split>.json``).

Row ids are ``<dialogue index>:<utterance index>`` (both from 0, in file order); ``extras``
hold ``dialog_idx``, ``turn`` and every other field of the utterance under its own name
(``speaker``, ``original_response``, ``BEGIN``, ``VRM``; an empty ``original_response``
means the WoW response was already faithful).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ..rows import Row
from .common import corpus_dataset, last_turns, layout_of, read_json

if TYPE_CHECKING:
    from datasets import Dataset

HUB_ID = "McGill-NLP/FaithDial"
SPLITS = ("train", "valid", "valid_random_split", "valid_topic_split", "test", "test_random_split", "test_topic_split")
SOURCE = f"the hub dataset {HUB_ID} (https://huggingface.co/datasets/{HUB_ID}, folder data/)"
TEXT_FIELDS = ("history", "knowledge", "response")  # the row's own fields; the rest of an utterance goes to extras
FEATURES = {
    "dialog_idx": "int64",
    "turn": "int64",
    "speaker": "string",
    "original_response": "string",
    "BEGIN": ["string"],
    "VRM": ["string"],
}  # the utterance's other fields, as released


def load_faithdial(split: str, path: str | Path | None, history_turns: int | None = 2) -> Dataset:
    """One split of FaithDial as rows, from the folder ``path`` or, when it is None, from the hub."""
    file = _hub_file(split) if path is None else _local_file(Path(path), split)
    dialogues = read_json(file, f"the FaithDial {split} dialogues (a JSON list)", SOURCE, list)
    counts = dict(dialogues=len(dialogues), turns=0, kept=0, skipped_no_knowledge=0)
    rows = []
    with layout_of(file, "FaithDial dialogues", SOURCE):
        for dialog_idx, dialogue in enumerate(dialogues):
            for turn, utterance in enumerate(dialogue["utterances"]):
                counts["turns"] += 1
                if not utterance["knowledge"]:
                    counts["skipped_no_knowledge"] += 1
                    continue
                counts["kept"] += 1
                extras = {
                    "dialog_idx": dialog_idx,
                    "turn": turn,
                    **{key: value for key, value in utterance.items() if key not in TEXT_FIELDS},
                }
                rows.append(
                    Row(
                        id=f"{dialog_idx}:{turn}",
                        document=utterance["knowledge"],
                        history=last_turns(utterance["history"], history_turns),
                        response=utterance["response"],
                        extras=extras,
                    )
                )
    summary = {"corpus": "faithdial", "split": split, "source": str(file), **counts}
    return corpus_dataset(rows, summary, FEATURES)


def _local_file(folder: Path, split: str) -> Path:
    """``<folder>/<split>.json``, or ``<folder>/data/<split>.json`` in a clone of the hub repository."""
    in_clone = folder / "data" / f"{split}.json"
    return in_clone if in_clone.is_file() else folder / f"{split}.json"


def _hub_file(split: str) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(HUB_ID, f"data/{split}.json", repo_type="dataset"))
    except (OSError, EntryNotFoundError) as error:
        raise InputError(
            f"FaithDial {split}: cannot get data/{split}.json from the hub dataset {HUB_ID} "
            f"({type(error).__name__}); download the JSON files from "
            f"https://huggingface.co/datasets/{HUB_ID} and pass their folder as path (--path)"
        ) from None
