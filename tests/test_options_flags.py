"""Every command's flags stay as users know them: names, default, nargs, action, dest and choices as in
tests/data/flags.json, the snapshot ``python scripts/compare_flags.py`` wrote of the last accepted head.

A flag that changes on purpose changes the snapshot in the same commit (rerun the script), and
``python scripts/compare_flags.py --against main`` lists what changed for the review.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "data" / "flags.json"

_spec = importlib.util.spec_from_file_location("compare_flags", ROOT / "scripts" / "compare_flags.py")
assert _spec is not None and _spec.loader is not None
compare_flags = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_flags)

TYPE_CHANGES: dict[str, tuple[str, str]] = {}
"""``{"faithkit COMMAND --flag": (type before, type after)}``: flags whose value parser is now made from a declaration
(named after its field) instead of a function typed by hand; what they accept is unchanged (tests/test_options.py)."""


def test_every_commands_flags_are_as_in_the_snapshot():
    found = compare_flags.differences(json.loads(SNAPSHOT.read_text()), compare_flags.flags())
    expected = [f"{flag}: type {before!r} -> {after!r}" for flag, (before, after) in TYPE_CHANGES.items()]
    assert sorted(found) == sorted(expected)


def test_differences_name_each_changed_option():
    before = {"score": [{"names": ["--metric"], "default": "pmi-faith", "dest": "metric"}]}
    after = {
        "score": [
            {"names": ["--metric"], "default": "q2", "dest": "metric"},
            {"names": ["--model"], "default": None, "dest": "model"},
        ],
        "new": [],
    }
    assert compare_flags.differences(before, after) == [
        "faithkit new: added",
        "faithkit score --metric: default 'pmi-faith' -> 'q2'",
        "faithkit score --model: added",
    ]
