"""Every path option of every command, tried with the mistakes users make: one `error:` line, exit 2, nothing written.

The options come from the command-line registry (``faithkit.cli.build_parser``): each is
declared with a :class:`~faithkit.data.paths.PathArg` kind, and each kind has its mistakes below,
so a new path option is covered without a new test. A last test makes sure no option that
takes a file or folder was declared without a kind.
"""

from __future__ import annotations

import argparse
import sys

import pytest

from faithkit.cli import build_parser
from faithkit.data.paths import PathArg
from tests.cli.helpers import choices_of

UNWRITABLE = "/proc/faithkit-test/out"  # permission bits do not stop root; /proc refuses new files to everyone
MISTAKES = {
    "rows": ("missing", "folder", "binary"),
    "text": ("missing", "folder", "binary", "latin-1"),
    "input folder": ("missing", "file"),
    "output file": ("folder", "under a file", "unwritable"),
    "output": ("under a file", "unwritable"),
    "output folder": ("file", "under a file", "unwritable"),
    "model": ("empty folder", "file"),
}
NOT_PATHS = {
    "--tokenizer": "a tokenizer name ('gpt2-bpe') or folder, checked when training builds the model",
    "--split": "a split's name",
    "--train-split": "a split's name",
    "--dev-split": "a split's name",
    "--run-name": "the run's name in the trackers",
    "--chosen": "comma-separated best.json files, each read and checked when the sweep plans its cells",
}


def _leaf_parsers(parser: argparse.ArgumentParser, words=()):
    """(command words, parser) for every command that runs, e.g. (("meta-eval", "begin"), parser)."""
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not commands:
        yield words, parser
    for action in commands:
        for name, child in action.choices.items():
            yield from _leaf_parsers(child, (*words, name))


def _path_options():
    for words, parser in _leaf_parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action.type, PathArg):
                for mistake in MISTAKES[action.type.kind]:
                    name = action.option_strings[0] if action.option_strings else action.dest
                    yield pytest.param(words, parser, action, mistake, id=f"{' '.join(words)} {name} {mistake}")


def _valid(action, tmp_path) -> str:
    """A value the option accepts, for the required options besides the one under test."""
    if choices_of(action):
        return str(next(iter(choices_of(action))))
    if action.dest == "metrics":  # meta-eval labels: metric names
        return "lexical"
    kind = getattr(action.type, "kind", None)
    if kind in ("rows", "text"):
        good = tmp_path / "good.jsonl"
        good.write_text('{"id": "1", "document": "D", "response": "R"}\n')
        return str(good)
    if kind == "output folder":
        return str(tmp_path / "out")
    if kind == "input folder":
        (tmp_path / "given").mkdir(exist_ok=True)
        return str(tmp_path / "given")
    return str(tmp_path / "new.jsonl") if kind in ("output file", "output") else "x"


def _bad(mistake: str, tmp_path) -> str:
    blocker = tmp_path / "a-file.jsonl"
    blocker.write_text("{}\n")
    made = {
        "missing": tmp_path / "missing.jsonl",
        "folder": tmp_path,
        "empty folder": tmp_path,
        "file": blocker,
        "under a file": blocker / "sub" / "out",
        "unwritable": UNWRITABLE,
    }
    if mistake == "binary":
        made[mistake] = tmp_path / "binary.jsonl"
        made[mistake].write_bytes(b"\x00\xff\xfe\x89PNG\r\n\x1a\n" * 8)
    if mistake == "latin-1":
        made[mistake] = tmp_path / "latin1.yaml"
        made[mistake].write_bytes("caf\u00e9: 1\n".encode("latin-1"))
    return str(made[mistake])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the unwritable place is /proc")
@pytest.mark.parametrize("words, parser, action, mistake", list(_path_options()))
def test_a_bad_path_is_one_error_line(faithkit, tmp_path, words, parser, action, mistake):
    flag = action.option_strings[0] if action.option_strings else action.metavar or action.dest
    bad = _bad(mistake, tmp_path)
    argv = [*words]
    for other in parser._actions:
        if not other.option_strings and other.dest != "help":  # a positional, e.g. a corpus name or a folder
            argv.append(bad if other is action else _valid(other, tmp_path))
        elif other.required and other is not action:
            argv += [other.option_strings[0], _valid(other, tmp_path)]
    if action.option_strings:
        argv += [flag, bad]
    before = sorted(p.name for p in tmp_path.iterdir())
    run = faithkit(*argv)
    assert run.code == 2, run.err
    assert "Traceback" not in run.err and run.out == ""
    assert run.err.count("\n") == 1 and run.err.startswith(f"error: faithkit {' '.join(words)}: argument {flag}: ")
    assert str(bad) in run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_every_option_that_takes_a_path_declares_its_kind():
    undeclared = []
    for words, parser in _leaf_parsers(build_parser()):
        for action in parser._actions:
            text = f"{action.help or ''} {action.metavar or ''} {action.dest}".lower()
            takes_text = (
                action.nargs != 0
                and not choices_of(action)
                and (action.type in (None, str) or getattr(action.type, "value_kind", None) is str)
                or isinstance(action.type, PathArg)
            )
            looks_like_path = any(word in text for word in ("file", "folder", "dir", "jsonl", "path", ".yaml"))
            if (
                takes_text
                and looks_like_path
                and not isinstance(action.type, PathArg)
                and not set(action.option_strings) & set(NOT_PATHS)
            ):
                undeclared.append(f"{' '.join(words)} {action.option_strings}")
    assert undeclared == []
