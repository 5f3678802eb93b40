"""The Table-4 protocol's dev and test halves: disjoint by conversation, stable, and what ``data export --half`` writes."""

import json
from pathlib import Path

import pytest

from faithkit.data import data_root
from faithkit.data.corpora import export_corpus, load_corpus
from faithkit.data.halves import conversation_of, half_of

FIXTURES = Path(__file__).parent / "data" / "corpora"
CORPORA = [
    ("topicalchat", "valid_rare", FIXTURES / "topicalchat"),
    ("faithdial", "valid", FIXTURES / "faithdial"),
    ("multidoc2dial", "validation", FIXTURES / "multidoc2dial"),
]


def test_a_conversation_has_one_half_whatever_else_is_read():
    # the hash's values, once and for all: a change would move rows between the halves of earlier runs
    assert [half_of(c) for c in ("t_bde29ce2-4153-48ef-9f3f-9b53ba0e23d8", "3", "4", "dial-8")] == [
        "dev",
        "dev",
        "test",
        "dev",
    ]
    assert {half_of(str(i)) for i in range(20)} == {"dev", "test"}
    assert conversation_of({"id": "t_x:4", "conversation_id": "t_x"}) == "t_x"
    assert conversation_of({"id": "5:2", "dialog_idx": 5}) == "5"
    assert conversation_of({"id": "abc:3"}) == "abc"


@pytest.mark.parametrize("corpus, split, path", CORPORA, ids=[c[0] for c in CORPORA])
def test_export_halves_are_disjoint_by_conversation_and_cover_the_split(tmp_path, corpus, split, path):
    whole = list(load_corpus(corpus, split, path))
    halves = {}
    for half in ("dev", "test"):
        summary = export_corpus(corpus, split, tmp_path / f"{half}.jsonl", path=path, half=half)
        halves[half] = [json.loads(line) for line in (tmp_path / f"{half}.jsonl").read_text().splitlines()]
        assert summary["half"] == half and summary["half_rows"] == len(halves[half])
    conversations = {half: {conversation_of(r) for r in rows} for half, rows in halves.items()}
    assert not conversations["dev"] & conversations["test"]
    assert sorted(r["id"] for rows in halves.values() for r in rows) == sorted(r["id"] for r in whole)
    again = export_corpus(corpus, split, tmp_path / "again.jsonl", path=path, half="dev")
    assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "dev.jsonl").read_text() and again["half"] == "dev"


def test_valid_rare_halves_split_its_conversations_nearly_evenly():
    rows = list(load_corpus("topicalchat", "valid_rare", data_root() / "topicalchat"))
    conversations = {conversation_of(r) for r in rows}  # 535 of the 539 have a turn the corpus keeps
    dev = {c for c in conversations if half_of(c) == "dev"}
    assert len(conversations) == 535 and 0.45 < len(dev) / len(conversations) < 0.55
