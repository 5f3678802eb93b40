"""Topical-Chat (Gopalakrishnan et al., Interspeech 2019): open-domain chats grounded in reading sets.

Two folder layouts are read:

- a clone of github.com/alexa/Topical-Chat: ``conversations/<split>.json``, the reading sets
  ``reading_sets/post-build/<split>.json`` (used when present) or ``reading_sets/pre-build/<split>.json``,
  and ``src/wiki/wiki.json``;
- flat, as in ``data_root()/topicalchat``: ``<split>.json``, ``reading_set_<split>.json``, ``wiki.json``.

Each turn names its sources in ``knowledge_source``: ``FS1``..``FS3`` are the factual sections
of that agent's reading set (an entity's Wikipedia lead section, shortened or summarized, and
Reddit fun facts), ``AS1``..``AS4`` the sections of the shared Washington Post article, and
``Personal Knowledge``. Pre-build reading sets hold only ids: the Wikipedia sections are looked
up in wiki.json (a map from text to id, inverted here as the official ``src/build.py`` does),
fun facts and article text are absent. Post-build reading sets, written by ``build.py``, hold
all of it as text (and an ``article`` entry, which tells them apart).

A turn's document is the text of every source it names that the reading set holds, in the
order named, joined by newlines (a factual section's text is its Wikipedia section followed by
its fun facts). As the authors preprocess it, each conversation's opening turn (no history) and
every turn that names Personal Knowledge are skipped by default; turns none of whose sources has
text (article-only turns with pre-build reading sets) are skipped too. Each skipped turn is
counted once, under the first reason in that order.

Row ids are ``<conversation id>:<turn index>`` (from 0); ``extras`` hold the turn's fields
(agent, knowledge_source, sentiment, turn_rating), the conversation's ``config``, and
``conversation_id``, ``turn`` and ``entities`` (of the factual sections named).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ..rows import Row
from .common import corpus_dataset, last_turns, layout_of, read_json

if TYPE_CHECKING:
    from datasets import Dataset

SPLITS = ("train", "valid_freq", "valid_rare", "test_freq", "test_rare")
SOURCE = "https://github.com/alexa/Topical-Chat"
PERSONAL = "Personal Knowledge"
WIKI_KEYS = ("shortened_wiki_lead_section", "summarized_wiki_lead_section")
FEATURES = {
    "conversation_id": "string",
    "turn": "int64",
    "config": "string",
    "agent": "string",
    "sentiment": "string",
    "knowledge_source": ["string"],
    "turn_rating": "string",
    "entities": ["string"],
}


def load_topicalchat(
    split: str,
    path: str | Path,
    history_turns: int | None = 2,
    *,
    keep_opening: bool = False,
    keep_personal: bool = False,
) -> Dataset:
    """One split of Topical-Chat as rows; ``keep_opening`` / ``keep_personal`` keep the turns the authors drop."""
    conversations_file, reading_file, wiki_file = _files(Path(path), split)
    conversations = read_json(conversations_file, f"the Topical-Chat {split} conversations", SOURCE, dict)
    sources, post_build = _reading_sets(reading_file, wiki_file, split)
    counts = dict(turns=0, kept=0, skipped_opening=0, skipped_personal=0, skipped_no_source=0)
    rows = []
    with layout_of(conversations_file, "Topical-Chat conversations", SOURCE):
        for conversation_id, conversation in conversations.items():
            if conversation_id not in sources:
                raise InputError(
                    f"{reading_file} has no reading set for conversation {conversation_id} of "
                    f"{conversations_file}; are both files of the {split} split?"
                )
            messages = [turn["message"] for turn in conversation["content"]]
            for index, turn in enumerate(conversation["content"]):
                counts["turns"] += 1
                texts, entities = sources[conversation_id][turn["agent"]]
                named = turn["knowledge_source"]
                document = "\n".join(dict.fromkeys(texts[name] for name in named if name in texts))
                if index == 0 and not keep_opening:
                    counts["skipped_opening"] += 1
                elif PERSONAL in named and not keep_personal:
                    counts["skipped_personal"] += 1
                elif not document:
                    counts["skipped_no_source"] += 1
                else:
                    counts["kept"] += 1
                    history = last_turns(messages[:index], history_turns)
                    rows.append(_turn_row(conversation_id, conversation, index, document, history, entities))
    summary = {
        "corpus": "topicalchat",
        "split": split,
        "source": str(conversations_file),
        "reading_sets": "post-build" if post_build else "pre-build",
        **counts,
    }
    return corpus_dataset(rows, summary, FEATURES)


def _turn_row(conversation_id: str, conversation: dict, index: int, document: str, history: list, entities: dict):
    """The row of a conversation's turn ``index``: its document, history and message, the turn's fields as
    extras, and the entities of the knowledge it names."""
    turn = conversation["content"][index]
    named = turn["knowledge_source"]
    extras = {
        "conversation_id": conversation_id,
        "turn": index,
        "config": conversation["config"],
        **{key: value for key, value in turn.items() if key != "message"},
        "entities": list(dict.fromkeys(entities[name] for name in named if name in entities)),
    }
    return Row(
        id=f"{conversation_id}:{index}", document=document, history=history, response=turn["message"], extras=extras
    )


def _files(folder: Path, split: str) -> tuple[Path, Path, Path]:
    """(conversations, reading sets, wiki) of ``split`` in a clone of the official repository or the flat layout."""
    if (folder / "conversations").is_dir():
        post_build = folder / "reading_sets" / "post-build" / f"{split}.json"
        reading = post_build if post_build.is_file() else folder / "reading_sets" / "pre-build" / f"{split}.json"
        return folder / "conversations" / f"{split}.json", reading, folder / "src" / "wiki" / "wiki.json"
    return folder / f"{split}.json", folder / f"reading_set_{split}.json", folder / "wiki.json"


def _reading_sets(reading_file: Path, wiki_file: Path, split: str):
    """For each conversation and agent, (source name -> text, factual section -> entity); and whether post-build."""
    reading_sets = read_json(reading_file, f"the Topical-Chat {split} reading sets", SOURCE, dict)
    with layout_of(reading_file, "Topical-Chat reading sets", SOURCE):
        post_build = any("article" in reading_set for reading_set in reading_sets.values())
    wiki = None if post_build else _wiki_by_id(wiki_file)
    with layout_of(reading_file, "Topical-Chat reading sets", SOURCE):
        return {
            conversation_id: _agent_sources(reading_set, wiki, reading_file)
            for conversation_id, reading_set in reading_sets.items()
        }, post_build


def _wiki_by_id(wiki_file: Path) -> dict[str, dict[int, str]]:
    """wiki.json inverted: for each kind of lead section, id -> text."""
    wiki = read_json(wiki_file, "the Topical-Chat Wikipedia sections (src/wiki/wiki.json)", SOURCE, dict)
    with layout_of(wiki_file, "Topical-Chat Wikipedia sections", SOURCE):
        return {key: {section_id: text for text, section_id in wiki[key].items()} for key in WIKI_KEYS}


def _agent_sources(reading_set: dict, wiki: dict | None, reading_file: Path) -> dict:
    """Per agent: the text of each source its reading set holds, and the entity of each factual section."""
    article = {name: text for name, text in reading_set.get("article", {}).items() if name.startswith("AS") and text}
    sources = {}
    for agent in ("agent_1", "agent_2"):
        texts, entities = dict(article), {}
        for name, section in reading_set[agent].items():
            entities[name] = section["entity"]
            parts = [_wiki_text(section[key], key, wiki, reading_file) for key in WIKI_KEYS if key in section]
            if wiki is None:  # post-build: the fun facts are text
                parts += section["fun_facts"]
            if any(parts):
                texts[name] = "\n".join(part for part in parts if part)
        sources[agent] = (texts, entities)
    return sources


def _wiki_text(value, key: str, wiki: dict | None, reading_file: Path) -> str:
    if wiki is None:
        return value
    if value not in wiki[key]:
        raise InputError(
            f"{reading_file}: {key} id {value} is not in wiki.json; use the wiki.json of the same "
            f"release ({SOURCE}, src/wiki/wiki.json)"
        )
    return wiki[key][value]
