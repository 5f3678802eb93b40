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

BAR = ("names", "default", "nargs", "action", "dest")
"""What users rely on. A flag's type and argparse choices may change when its declaration checks its value instead
(``python scripts/compare_flags.py --against main`` lists those for the review)."""


def test_every_commands_flags_are_as_in_the_snapshot():
    before, now = json.loads(SNAPSHOT.read_text()), compare_flags.flags()
    assert compare_flags.differences(before, now, BAR) == []


BUILT_IN = {
    ("", "--version"): "argparse's own version action",
    ("", "--quiet"): "faithkit's own switch, with the short name -q",
    ("", "--verbose"): "faithkit's own switch, with the short name -v",
}
"""Options of the root parser that are no declared option, and why."""


def test_every_option_is_made_from_a_declaration():
    from faithkit.cli import build_parser

    for words, parser in compare_flags.command_parsers(build_parser()):
        for action in parser._actions:
            if action.dest == "help" or not action.option_strings and action.nargs == "A...":
                continue
            name = (" ".join(words), (action.option_strings or [action.dest])[-1])
            assert hasattr(action, "declared") or name in BUILT_IN, f"faithkit {' '.join(name)} is typed by hand"


def test_differences_name_each_changed_option():
    before = {"score": [{"names": ["--metric"], "default": "pmi-faith", "dest": "metric"}]}
    after = {
        "score": [
            {"names": ["--metric"], "default": "q2", "dest": "metric"},
            {"names": ["--model"], "default": None, "dest": "model"},
        ],
        "new": [],
    }
    assert compare_flags.differences(before, after, ("default",)) == [
        "faithkit new: added",
        "faithkit score --metric: default 'pmi-faith' -> 'q2'",
        "faithkit score --model: added",
    ]
