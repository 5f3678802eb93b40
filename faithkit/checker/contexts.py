"""Where examples come from: the corpus turns and Wikipedia sections (:class:`Context`), parsed into
:class:`Section` s split between train and test, and the document window cut around a target sentence."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_DOCUMENT_CHARS = 700
"""Documents are cut to at most this many characters (about 160 tokens) around their target sentence."""


@dataclass
class Section:
    """A Wikipedia lead section with its sentences (spaCy spans) and entities."""

    key: str
    text: str
    sentences: list  # spaCy Spans
    split: str


def section_split(text: str, test_share: float) -> str:
    """``test`` for a stable ``test_share`` of sections (by a hash of the text), else ``train``."""
    bucket = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if bucket < test_share else "train"


@dataclass(frozen=True)
class SectionSplit:
    """Which sections are test: a stable ``test_share`` of them (:func:`section_split`), and every one of
    ``held_out`` (the sections of rated test responses, :mod:`.rated`)."""

    test_share: float
    held_out: frozenset[str] = frozenset()

    def of(self, text: str) -> str:
        return "test" if text in self.held_out else section_split(text, self.test_share)


def window_around(section: Section, index: int, rng: random.Random) -> str:
    """One to four sentences of the section that include sentence ``index``, within :data:`MAX_DOCUMENT_CHARS`."""
    sentences = [s.text.strip() for s in section.sentences]
    if rng.random() < 0.3:
        return sentences[index]
    start, end = index - rng.randint(0, 2), index + 1 + rng.randint(0, 2)
    start, end = max(0, start), min(len(sentences), end)
    while end - start > 1 and len(" ".join(sentences[start:end])) > MAX_DOCUMENT_CHARS:
        if end - 1 > index:
            end -= 1
        else:
            start += 1
    return " ".join(sentences[start:end])[: MAX_DOCUMENT_CHARS * 2]


@dataclass
class Context:
    """A corpus turn: its document's sections, its history and the human response."""

    row_id: str
    sections: list[str]
    history: list[str]
    response: str
    personal: bool
    factual: bool


MIN_SECTION_CHARS = 80
"""Shorter paragraphs (headings, one-liners) are not used as documents."""


def wiki_contexts(
    folder: str | Path, histories: Sequence[Context], exclude_split: str, seed: int, min_chars: int = MIN_SECTION_CHARS
) -> list[Context]:
    """One context per Topical-Chat Wikipedia section (``wiki.json``) that no conversation of ``exclude_split``
    reads (keep the split you evaluate dialogue models on out), each with the history of a random turn."""
    from ..data.corpora.topicalchat import _files

    _, reading_file, wiki_file = _files(Path(folder), exclude_split)
    wiki = json.loads(wiki_file.read_text(encoding="utf-8"))
    reading_sets = json.loads(reading_file.read_text(encoding="utf-8"))
    excluded = {
        (key, str(section[key]))
        for conversation in reading_sets.values()
        for agent in conversation.values()
        if isinstance(agent, dict)
        for section in agent.values()
        if isinstance(section, dict)
        for key in ("shortened_wiki_lead_section", "summarized_wiki_lead_section")
        if key in section
    }
    texts = sorted(  # pre-build reading sets name a section by id, post-build ones hold its text
        {
            text
            for key, sections in wiki.items()
            for text, id_ in sections.items()
            if (key, str(id_)) not in excluded and (key, text) not in excluded
        }
    )
    rng = random.Random(seed)
    return [
        Context(
            f"wiki:{hashlib.sha256(text.encode()).hexdigest()[:12]}",
            [text],
            rng.choice(histories).history,
            "",
            False,
            False,
        )
        for text in texts
        if len(text) > min_chars
    ]


def topicalchat_contexts(folder: str | Path, split: str, min_chars: int = MIN_SECTION_CHARS) -> list[Context]:
    """Every turn of a Topical-Chat split with a Wikipedia document, personal-knowledge turns included."""
    from ..data.corpora.topicalchat import PERSONAL, load_topicalchat

    rows = load_topicalchat(split, folder, history_turns=2, keep_personal=True)
    contexts = []
    for row in rows:
        named = row["knowledge_source"]
        sections = [s.strip() for s in row["document"].split("\n") if len(s.strip()) > min_chars]
        if sections and row["history"]:
            contexts.append(
                Context(
                    row["id"],
                    sections,
                    list(row["history"]),
                    row["response"],
                    personal=PERSONAL in named,
                    factual=any(n.startswith("FS") for n in named),
                )
            )
    return contexts
