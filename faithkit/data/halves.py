"""Two halves of one split by conversation: choose decoding settings on the dev half, report on the test half.

A row's half follows from its conversation's id alone (a hash), so the halves are the same in
every run, process and faithkit version, whatever the order or subset of rows read, and no
conversation has turns in both: settings chosen on one half are never scored on the other's
contexts (the Table-4 protocol, docs/table4.md). The halves are near, not exactly, equal in size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

HALVES = ("dev", "test")
CONVERSATION_FIELDS = ("conversation_id", "dialog_idx", "dial_id")
"""The corpora's conversation fields: Topical-Chat's, FaithDial's and MultiDoc2Dial's."""


def conversation_of(record: Mapping) -> str:
    """The conversation a row belongs to: its corpus's conversation field, else its id up to the last ``:``
    (faithkit's corpus ids are ``<conversation>:<turn>``)."""
    for name in CONVERSATION_FIELDS:
        if record.get(name) is not None:
            return str(record[name])
    return str(record["id"]).rsplit(":", 1)[0]


def half_of(conversation: str) -> str:
    """``dev`` or ``test``: the first bit of a SHA-256 of the conversation id."""
    return HALVES[hashlib.sha256(f"faithkit half\x00{conversation}".encode()).digest()[0] & 1]
