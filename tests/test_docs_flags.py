"""Every flag the docs and the README name exists: in a `faithkit CMD …` command line (a code block or an inline code
span), a flag of that very command; in a `python benchmarks/X.py …` line, one that script declares; anywhere else, a
flag of some faithkit command or script, unless the line runs another program (pip, accelerate, a serving engine)
or the flag is one of :data:`OTHER_PROGRAMS_FLAGS`."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from faithkit.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`]+)`")
PREFIX = re.compile(r"^(?:\w+=\S*|nice|-n|\d+|time|/usr/bin/time|-v|timeout|cd|\S+/?&&)$")
"""Words before a command's program: variables, ``nice -n 5``, ``time``, ``timeout 300``."""
PROGRAMS = ("pip", "accelerate", "vllm", "llama-server", "mkdocs", "make", "sh", "bash", "hf", "docker", "git",
            "pytest", "uv", "cmake", "python3.11", "apt-get")  # fmt: skip
"""Programs whose command lines name their own flags (not faithkit's, nor a faithkit script's)."""
OTHER_PROGRAMS_FLAGS = {
    "--num_processes": "accelerate launch (faithkit launch passes it on)",
    "--multi_gpu": "accelerate launch (faithkit launch passes it on)",
    "--cpu": "accelerate launch, named in prose",
    "--strict": "mkdocs build, named in prose",
    "--n_threads": "llama.cpp's server settings, named in prose",
    "--n_ctx": "llama.cpp's server settings, named in prose",
}
"""Flags of other programs that pages name in prose, away from a command line, and whose they are."""
SCRIPTS = sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")])
SCRIPT_FLAGS = {path.name: set(re.findall(r"[\"'](--[a-z][\w-]*)[\"']", path.read_text())) for path in SCRIPTS}
"""The flags each benchmark and script declares (read from its source: ``add_argument("--rows", ...)``)."""


def _parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every faithkit parser by its command path (``("meta-eval", "labels")``)."""
    found = {}

    def walk(parser, path):
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


PARSERS = _parsers()
KNOWN = {option for parser in PARSERS.values() for action in parser._actions for option in action.option_strings}
KNOWN |= {flag for flags in SCRIPT_FLAGS.values() for flag in flags} | set(OTHER_PROGRAMS_FLAGS)


def command_lines(text: str) -> tuple[list[str], str]:
    """The lines of a page's code blocks (continuations joined; a line that runs no program, such as output or a
    comment, is checked as prose is) and its inline code spans, and what is left: its prose."""
    prose = FENCE.sub("", text)
    lines = [line for _, body in FENCE.findall(text) for line in body.replace("\\\n", " ").splitlines()]
    return lines + [" ".join(span.split()) for span in INLINE.findall(prose)], INLINE.sub("", prose)


def misnamed_flags(page: Path) -> list[str]:
    problems = []
    lines, prose = command_lines(page.read_text(encoding="utf-8"))
    for line in lines:
        for segment in re.split(r"&&|\|\||;|\|", line):
            problems += _segment_problems(page, segment)
    return problems + _unknown(page, FLAG.findall(prose), "prose")


def _segment_problems(page: Path, segment: str) -> list[str]:
    """A command's flags against its program: faithkit's command, a faithkit script, another program (not checked),
    or, for a span that runs nothing (`--nli-model`), any of them."""
    words = segment.split()
    while words and PREFIX.match(words[0]):
        words = words[1:]
    if words[:3] in (["python", "-m", "faithkit"], ["python3", "-m", "faithkit"]):
        words = words[2:]
    program = words[0] if words else ""
    if program == "faithkit":
        path, rest = (), words[1:]
        while rest and (*path, rest[0]) in PARSERS:
            path, rest = (*path, rest[0]), rest[1:]
        if path[:1] == ("launch",):  # the rest is accelerate's, then the program's
            return []
        options = {option for action in PARSERS[path]._actions for option in action.option_strings}
        return [
            f"{page.name}: `faithkit {' '.join(path)}` has no {flag}: {segment.strip()}"
            for flag in (match.group() for match in map(FLAG.match, rest) if match)
            if flag not in options
        ]
    script = next((Path(word).name for word in words[:2] if word.endswith(".py")), None)
    if program.startswith("python") and script in SCRIPT_FLAGS:
        own = segment.split(" -- ")[0]  # after a bare --, the words go to the program the script runs
        return [
            f"{page.name}: {script} has no {flag}: {segment.strip()}"
            for flag in FLAG.findall(own)
            if flag not in SCRIPT_FLAGS[script]
        ]
    if program in PROGRAMS or program.startswith(("python", "./", "/")):
        return []
    return _unknown(page, FLAG.findall(segment), segment)


def _unknown(page: Path, flags: list[str], where: str) -> list[str]:
    return [
        f"{page.name}: no faithkit command or script has {flag} ({where.strip()[:80]})"
        for flag in flags
        if flag not in KNOWN
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_flag_a_page_names_exists(page):
    assert misnamed_flags(page) == []


def test_the_check_finds_a_flag_that_does_not_exist(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Run `faithkit score --metric faithkit-checker --metric-option nli_model=FOLDER`, or\n"
        "```bash\nfaithkit meta-eval labels --input x --metrics q2 --windows 3\npip install --no-deps faithkit\n```\n"
        "and in prose `--no-such-flag`; `--nli-model` and `--num_processes` exist.\n"
    )
    assert misnamed_flags(page) == [
        "page.md: `faithkit meta-eval labels` has no --windows: faithkit meta-eval labels --input x --metrics q2 "
        "--windows 3",
        "page.md: `faithkit score` has no --metric-option: faithkit score --metric faithkit-checker --metric-option "
        "nli_model=FOLDER",
        "page.md: no faithkit command or script has --no-such-flag (--no-such-flag)",
    ]
