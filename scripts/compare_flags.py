"""Every command's flags as JSON, to show that a change to how flags are declared changed none of them.

For each command (``faithkit``, ``score``, ``meta-eval begin``, …) it lists each option: its
names, default, nargs, action, dest, choices and type name. tests/test_options_flags.py holds the
parser to tests/data/flags.json, the snapshot of the last accepted head.

    python scripts/compare_flags.py                   # the current checkout's flags, as JSON
    python scripts/compare_flags.py --against main    # the differences from another revision's; exit 1 if any

``--against`` unpacks that revision into a scratch folder (``git archive``) and runs this script
there, so both sides are described by the same code.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

COMPARED = ("names", "default", "nargs", "action", "dest", "choices", "type")
"""What is described of each option (its help is left out: it is rendered from the declaration and may be reworded)."""


def command_parsers(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(command words, parser) of the root and of every command below it, e.g. (("meta-eval", "begin"), …)."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from command_parsers(subparser, (*words, name))


def _plain(value):
    """A value as JSON holds it: lists for tuples, the name of a function, the text of anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return repr(value)


def _type_name(kind) -> str | None:
    if kind is None:
        return None
    return getattr(kind, "__name__", type(kind).__name__)


def describe(action: argparse.Action) -> dict:
    return {
        "names": list(action.option_strings) or [action.dest],
        "default": _plain(action.default),
        "nargs": _plain(action.nargs),
        "action": type(action).__name__,
        "dest": action.dest,
        "choices": None if action.choices is None else sorted(map(str, action.choices)),
        "type": _type_name(action.type),
    }


def flags() -> dict[str, list[dict]]:
    """``{"meta-eval begin": [option, …]}`` for every command of the parser, the root's own options under ``""``."""
    from faithkit.cli import build_parser

    return {
        " ".join(words): [
            describe(action) for action in parser._actions if not isinstance(action, argparse._SubParsersAction)
        ]
        for words, parser in command_parsers(build_parser())
    }


def differences(before: dict, after: dict, keys: tuple[str, ...] = COMPARED) -> list[str]:
    """One line per command or option added or removed, or whose ``keys`` differ."""
    lines = []
    for command in sorted(set(before) | set(after)):
        if command not in after or command not in before:
            lines.append(f"faithkit {command}: {'removed' if command not in after else 'added'}")
            continue
        old = {tuple(option["names"]): option for option in before[command]}
        new = {tuple(option["names"]): option for option in after[command]}
        for names in sorted(set(old) | set(new)):
            where = f"faithkit {command} {'/'.join(names)}"
            if names not in new or names not in old:
                lines.append(f"{where}: {'removed' if names not in new else 'added'}")
                continue
            for key in keys:
                if old[names].get(key) != new[names].get(key):
                    lines.append(f"{where}: {key} {old[names].get(key)!r} -> {new[names].get(key)!r}")
    return lines


def flags_of_revision(revision: str) -> dict:
    """The flags of ``revision`` of this checkout, described by this script run on that revision's files."""
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as scratch:
        archive = subprocess.run(["git", "-C", str(root), "archive", revision], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", scratch], input=archive.stdout, check=True)
        environment = {**os.environ, "PYTHONPATH": scratch}
        dumped = subprocess.run(
            [sys.executable, str(Path(__file__).resolve())], check=True, capture_output=True, env=environment
        )
    return json.loads(dumped.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REVISION", help="print the differences from this git revision's flags")
    args = parser.parse_args(argv)
    if args.against is None:
        print(json.dumps(flags(), indent=1, sort_keys=True))
        return 0
    found = differences(flags_of_revision(args.against), flags())
    print("\n".join(found) or f"every command's flags are as in {args.against}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", "") or str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
