"""The claim checker's examples: their labels and kinds, and the files they are written to and read from."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import InputError
from ..data.files import replacing, write_text

LABELS = ("supported", "generic", "unsupported")

KINDS: dict[str, tuple[str, str]] = {
    "extractive": ("supported", "a document sentence, restated as a dialogue turn"),
    "clause": ("supported", "the first clause of a document sentence (the rest dropped)"),
    "pronoun": ("supported", "a document sentence with its subject entity replaced by a pronoun"),
    "human_grounded": ("supported", "a human turn whose content words all occur in its document"),
    "generic_template": ("generic", "a generic reply from a fixed list (reaction, opinion, question back)"),
    "human_generic": ("generic", "a short human turn with no entity, number or document word"),
    "swap_same_document": ("unsupported", "one entity replaced by another of its type from the same section"),
    "swap_other_document": ("unsupported", "one entity replaced by another of its type from another section"),
    "number": ("unsupported", "one number or year changed"),
    "negation": ("unsupported", "the sentence negated, or its negation removed"),
    "antonym": ("unsupported", "one word replaced by its antonym"),
    "role_swap": ("unsupported", "two entities of one type swapped in place"),
    "added_claim": ("unsupported", "a document sentence followed by a sentence from another section"),
    "unrelated_claim": ("unsupported", "a sentence from another section alone"),
    "lm_claim": (
        "unsupported",
        "the LM's reply to the history without the document, naming an entity or number the document does not",
    ),
    "rated_supported": ("supported", "a generated response every rater agreed is faithful (rated data)"),
    "rated_generic": ("generic", "a generated response every rater rated Neutral on faithfulness (rated data)"),
    "rated_unsupported": ("unsupported", "a generated response some rater disagreed is faithful (rated data)"),
}
"""Example kinds: their label and what they are (the data card lists them with their counts)."""


@dataclass
class Example:
    """One training or test example of the checker: a (document, history, response) with its label, and how it was
    made (its kind, source and the edit's detail), so the data card can count and explain them.

    Args:
        id (`str`): unique across the data.
        document (`str`): the document window the checker reads.
        history (`list[str]`): the dialogue's turns.
        response (`str`): the response.
        label (`str`): one of :data:`LABELS`.
        kind (`str`): one of :data:`KINDS`.
        source (`str`): the corpus it came from.
        detail (`str`, defaults to ""): what the edit did.
        split (`str`, defaults to "train"): ``train`` or ``test``.
        section (`str`, defaults to ""): the document section it came from (the split follows sections).

    Examples:

    ```python
    >>> from faithkit.checker.examples import Example
    >>> Example("wiki-1", "Emperor penguins live only in Antarctica.", ["Where do they live?"], "They live in the Arctic.",
    ...         "unsupported", "swap_same_document", "wiki", detail="LOC 'Antarctica' -> 'the Arctic'")
    Example(id='wiki-1', document='Emperor penguins live only in Antarctica.', history=['Where do they live?'], response='They live in the Arctic.', label='unsupported', kind='swap_same_document', source='wiki', detail="LOC 'Antarctica' -> 'the Arctic'", split='train')
    ```
    """

    id: str
    document: str
    history: list[str]
    response: str
    label: str
    kind: str
    source: str
    detail: str = ""
    split: str = "train"
    section: str = field(default="", repr=False)


RATED_KINDS = ("rated_supported", "rated_generic", "rated_unsupported")
"""Kinds made from rated generations (:mod:`.rated`); the card lists them only when the data holds some."""


def card(examples: Sequence[Example], sources: Iterable[str], seed: int, notes: Sequence[str] = ()) -> str:
    """A dataset card: what each kind is, how many of each per split, how to rebuild the files, and ``notes``
    (paragraphs: how rated examples were labelled).

    Args:
        examples (`Sequence[Example]`): the data.
        sources (`Iterable[str]`): the corpora they came from.
        seed (`int`): the recipe's seed.
        notes (`Sequence[str]`, defaults to ()): paragraphs to add.

    Examples:

    ```python
    >>> from faithkit.checker.examples import Example
    >>> example = Example("wiki-1", "Emperor penguins live only in Antarctica.", [], "They live in the Arctic.",
    ...                   "unsupported", "swap_same_document", "wiki")
    >>> from faithkit.checker.examples import card
    >>> card([example], ["wiki"], seed=0).splitlines()[-3:]  # the labels' table: train, test
    ['| supported | 0 | 0 |', '| generic | 0 | 0 |', '| unsupported | 1 | 0 |']
    ```
    """
    counts = Counter((e.kind, e.split) for e in examples)
    lines = [
        "---",
        "license: cdla-sharing-1.0",
        "task_categories: [text-classification]",
        "---",
        "# faithkit claim-checker training data",
        "",
        f"Made by `faithkit checker data` (seed {seed}) from: {', '.join(sources)}.",
        "Documents are split between train and test by section: no Wikipedia section is in both.",
        *[line for note in notes for line in ("", note)],
        "",
        "| kind | label | what | train | test |",
        "|---|---|---|---|---|",
    ]
    for kind, (label, what) in KINDS.items():
        if kind in RATED_KINDS and not counts[kind, "train"] + counts[kind, "test"]:
            continue
        lines.append(f"| {kind} | {label} | {what} | {counts[kind, 'train']} | {counts[kind, 'test']} |")
    labels = Counter((e.label, e.split) for e in examples)
    lines += ["", "| label | train | test |", "|---|---|---|"]
    lines += [f"| {label} | {labels[label, 'train']} | {labels[label, 'test']} |" for label in LABELS]
    return "\n".join(lines) + "\n"


def write(examples: Sequence[Example], folder: str | Path, card_text: str) -> dict[str, Path]:
    """``train.jsonl``, ``test.jsonl`` (one example per line; ``datasets.load_dataset("json", ...)`` reads them)
    and ``README.md``, the card, each written whole by :mod:`faithkit.data.files` (never through a link).

    Args:
        examples (`Sequence[Example]`): the data.
        folder (`str` or `Path`): where to write (made if missing).
        card_text (`str`): the card (:func:`card`).

    Examples:

    ```python
    >>> import tempfile
    >>> from faithkit.checker.examples import Example
    >>> example = Example("wiki-1", "Emperor penguins live only in Antarctica.", [], "They live in the Arctic.",
    ...                   "unsupported", "swap_same_document", "wiki")
    >>> from faithkit.checker.examples import read, write
    >>> paths = write([example], tempfile.mkdtemp(), card_text="# data")
    >>> sorted(paths), [e.id for e in read(paths["train"])], read(paths["test"])
    (['test', 'train'], ['wiki-1'], [])
    ```
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in ("train", "test"):
        paths[split] = folder / f"{split}.jsonl"
        with replacing(paths[split]) as stream:
            for example in examples:
                if example.split == split:
                    stream.write(json.dumps(asdict(example), ensure_ascii=False) + "\n")
    write_text(folder / "README.md", card_text)
    return paths


def read(path: str | Path) -> list[Example]:
    """Examples written by :func:`write`; a line that is not one is an :class:`InputError` naming it.

    Args:
        path (`str` or `Path`): a ``train.jsonl`` or ``test.jsonl``.

    Examples:

    ```python
    >>> import pathlib, tempfile
    >>> from faithkit.checker.examples import read
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.jsonl"
    >>> _ = path.write_text('{"id": "x", "label": "true"}\\n')
    >>> read(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    faithkit.errors.InputError: .../train.jsonl:1: not a checker example (label must be one of supported, generic, unsupported, got 'true')
    ```
    """
    examples = []
    with open(path, encoding="utf-8-sig") as stream:
        for number, line in enumerate(stream, 1):
            try:
                record = json.loads(line)
                if record["label"] not in LABELS:
                    raise ValueError(f"label must be one of {', '.join(LABELS)}, got {record['label']!r}")
                examples.append(Example(**record))
            except (ValueError, KeyError, TypeError) as error:
                raise InputError(f"{path}:{number}: not a checker example ({error})") from None
    return examples
