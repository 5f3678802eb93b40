"""Every command declares what it reads and writes (faithkit.cli.declared_files), and no output replaces an input.

The first test walks the parser: a command that runs must carry a declaration, and every path
option it has must be in it (an input option among the reads, an output option among the
writes), so a new command or option cannot skip the inputs-vs-outputs check. The others are the
cases that once overwrote a corpus: ``data export`` onto the files it reads, and the Table-4
recipe's variables.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from faithkit.cli import build_parser
from faithkit.cli.declared_files import Files
from faithkit.data.paths import PathArg

from .helpers import ROOT, choices_of, subprocess_env
from .test_bad_paths import _leaf_parsers

CORPORA = ROOT / "tests" / "data" / "corpora"
INPUT_KINDS = ("rows", "text", "input folder", "model")


def _argv(words, parser, tmp_path, given: dict) -> list[str]:
    """A command line of ``words`` with ``given`` ({action: value}) and a valid value for each other required option."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "1", "document": "D", "history": ["H"], "response": "R"}\n')
    argv = [*words]
    for action in parser._actions:
        if action in given:
            value = given[action]
        elif action.required or not action.option_strings and action.dest != "help":
            kind = getattr(action.type, "kind", None)
            value = (
                str(next(iter(choices_of(action))))
                if choices_of(action)
                else "lexical"
                if action.dest == "metrics"
                else str(rows)
                if kind in ("rows", "text")
                else str(_folder(tmp_path))
                if kind == "input folder"
                else str(tmp_path / "default-out")
                if kind and kind.startswith("output")
                else "x"
            )
        else:
            continue
        if action.dest == "config" and words == ("train",):  # a config that checks
            Path(value).write_text(f"model: gpt2\ndata: {{train_file: {rows}, dev_file: {rows}}}\n")
        argv += [action.option_strings[0], value] if action.option_strings else [value]
    if words == ("sweep",):  # the settings a sweep needs, unless under test
        needed = {"input": str(rows), "out": str(tmp_path / "sweep-out"), "generator": "x"}
        for dest in needed.keys() - {action.dest for action in given}:
            argv += [f"--{dest}", needed[dest]]
    return argv


def _folder(tmp_path) -> Path:
    (tmp_path / "folder").mkdir(exist_ok=True)
    return tmp_path / "folder"


def _path_value(action, tmp_path, index: int) -> str:
    """A distinct existing input (file or folder) or a new output for ``action``."""
    kind = action.type.kind
    path = tmp_path / f"given-{index}"
    if kind == "input folder":
        path.mkdir()
    elif kind in ("rows", "text"):
        suffix = ".yaml" if action.dest == "config" else ".jsonl"
        path = path.with_suffix(suffix)
        path.write_text(
            "{}\n" if suffix == ".yaml" else '{"id": "1", "document": "D", "history": ["H"], "response": "R"}\n'
        )
    return str(path)


def _cases():
    for words, parser in _leaf_parsers(build_parser()):
        for index, action in enumerate(parser._actions):
            if isinstance(action.type, PathArg):
                name = action.option_strings[0] if action.option_strings else action.dest
                yield pytest.param(words, parser, action, index, id=f"{' '.join(words)} {name}")


def test_every_command_that_runs_declares_what_it_reads_and_writes():
    undeclared = [
        " ".join(words)
        for words, parser in _leaf_parsers(build_parser())
        if not isinstance(parser.get_default("files"), Files)
    ]
    assert undeclared == []


@pytest.mark.parametrize("words, parser, action, index", list(_cases()))
def test_every_path_option_is_in_its_commands_declaration(words, parser, action, index, tmp_path):
    value = _path_value(action, tmp_path, index)
    argv = _argv(words, parser, tmp_path, {action: value})
    if words == ("train",) and action.dest == "corpus_path":
        argv += ["--corpus", "topicalchat", "--train-file", "none", "--dev-file", "none"]
    args = build_parser().parse_args(argv)
    files: Files = args.files
    if action.type.kind in INPUT_KINDS:
        declared = [path for path in files.reads(args) if path is not None]
    else:
        declared = [output.path for output in files.writes(args)]
    # the path itself, or the files a command reads or writes in that folder (system-level: scores.jsonl)
    assert any(Path(path) == Path(value) or Path(path).parent == Path(value) for path in declared), (argv, declared)


SPLIT_FILES = (
    "conversations/valid_rare.json",
    "src/wiki/wiki.json",
    "reading_sets/pre-build/valid_rare.json",
    "conversations/valid_freq.json",
)


@pytest.mark.parametrize("output", [*SPLIT_FILES, "../begin/begin_dev_wow.tsv", ".", "arrow:.", "arrow:src"])
def test_data_export_never_replaces_a_file_of_the_data_folder(faithkit, tmp_path, monkeypatch, output):
    """Issue 39's case 1: an export onto the corpus it reads (or elsewhere in the data root) is one line, rc 2,
    and every data file is byte-identical afterwards."""
    data = tmp_path / "data"
    shutil.copytree(CORPORA, data)
    (data / "begin").mkdir()
    (data / "begin" / "begin_dev_wow.tsv").write_text("knowledge\tmessage\tresponse\tbegin_label\n")
    pristine = tmp_path / "pristine"
    shutil.copytree(data, pristine)
    monkeypatch.setenv("FAITHKIT_DATA", str(data))
    file_format = "arrow" if output.startswith("arrow:") else "jsonl"
    target = data / "topicalchat" / output.removeprefix("arrow:")
    run = faithkit(
        "data", "export", "topicalchat", "--split", "valid_rare", "--output", target, "--format", file_format
    )
    assert run.code == 2 and run.out == "", run.err
    assert run.err.count("\n") == 1 and run.err.startswith("error: --output ") and "choose another --output" in run.err
    comparison = filecmp.dircmp(data, pristine)
    assert _differences(comparison) == []
    assert all(filecmp.cmp(p, pristine / p.relative_to(data), shallow=False) for p in data.rglob("*") if p.is_file())


def _differences(comparison: filecmp.dircmp) -> list[str]:
    found = [*comparison.left_only, *comparison.right_only, *comparison.diff_files]
    return found + [name for sub in comparison.subdirs.values() for name in _differences(sub)]


def test_an_export_beside_the_corpus_is_still_written(faithkit, tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(CORPORA, data)
    monkeypatch.setenv("FAITHKIT_DATA", str(data))
    run = faithkit("data", "export", "topicalchat", "--split", "valid_rare", "--output", tmp_path / "rows.jsonl")
    assert run.code == 0, run.err
    assert (tmp_path / "rows.jsonl").read_text().count("\n") > 0


def test_scoring_into_the_inputs_own_sidecar_is_refused(faithkit, tmp_path):
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"id": "1", "document": "D", "response": "R"}\n')
    sidecar = tmp_path / "in.jsonl.meta.json"
    sidecar.write_text('{"fingerprint": {}}\n')
    run = faithkit("score", "--metric", "lexical", "--input", rows, "--output", sidecar, "--restart")
    assert run.code == 2 and run.err.startswith(f"error: --output {sidecar} is the input {sidecar}"), run.err
    assert sidecar.read_text() == '{"fingerprint": {}}\n'


RUN_SH = ROOT / "configs" / "experiments" / "table4" / "run.sh"


@pytest.mark.parametrize(
    "variables, message",
    [
        ({"DEV_LIMIT": "abc"}, "DEV_LIMIT must be a whole number of rows, at least 1, got 'abc'"),
        ({"TEST_LIMIT": "0"}, "TEST_LIMIT must be a whole number of rows, at least 1, got '0'"),
        ({"FAMILIES": "pmi greedy"}, "FAMILIES: no strategy family 'greedy'"),
        ({"CORPUS_PATH": "/nonexistent/corpus"}, "CORPUS_PATH: folder not found: /nonexistent/corpus"),
        ({"OUT": "{data}/topicalchat"}, "OUT {data}/topicalchat is inside the data folder {data}"),
    ],
)
def test_the_table4_recipe_checks_its_variables_before_any_work(tmp_path, variables, message):
    """A wrong variable stops run.sh at once (no training, no export), one `error:` line, rc 2."""
    data = tmp_path / "data"
    shutil.copytree(CORPORA, data)
    variables = {key: value.format(data=data) for key, value in variables.items()}
    env = {**subprocess_env(), "FAITHKIT_DATA": str(data), "OUT": str(tmp_path / "out"), **variables}
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    (tmp_path / "bin").mkdir()
    spy = tmp_path / "bin" / "faithkit"  # a faithkit that only notes that it ran
    spy.write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'ran'}\n")
    spy.chmod(0o755)
    run = subprocess.run(["sh", str(RUN_SH)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    assert run.stderr == f"error: run.sh: {message.format(data=data)}" + run.stderr.split(message.format(data=data))[1]
    assert run.stderr.count("\n") == 1
    assert not (tmp_path / "ran").exists() and sorted(os.listdir(data)) == sorted(os.listdir(CORPORA))
