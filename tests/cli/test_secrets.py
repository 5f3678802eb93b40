"""No secret is ever written (issue 52, case 1): an API key or a password in a server's URL reaches the server and
nothing else — no output file of any kind, no printed line, no error line.

The walks cover every command: no parser takes an abbreviated flag; every option whose name says it carries a
secret declares it; an abbreviated secret flag is refused without showing its value; and every command that takes
a secret runs against a fake server with one, after which no file it wrote and no line it printed holds it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from faithkit.settings import redaction
from faithkit.cli import SECRET_FLAGS, build_parser, remember_secrets, secret_flags, secret_kind

from .fake_engine import FakeEngine
from .helpers import write_jsonl, write_wow_csv
from .test_bad_paths import _leaf_parsers

KEY = "sk-live-7f3a9c"
PASSWORD = "hunter-2-pw"
ROWS = [
    {"id": "a", "document": "Apples ripen in autumn.", "history": ["When are apples ripe?"], "response": "In autumn."},
    {"id": "b", "document": "Jazz began in New Orleans.", "history": ["Where did jazz start?"], "response": "Paris."},
]
SECRET_WORDS = {"token", "password", "secret", "header", "headers", "server", "url", "auth", "credentials"}
"""Words of an option's name that say it carries a secret (besides ``api_key``; ``score_key`` names a column)."""


def _all_parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _all_parsers(child)


def test_no_parser_takes_an_abbreviated_flag():
    parsers = list(_all_parsers(build_parser()))
    assert len(parsers) > 17 and [parser.prog for parser in parsers if parser.allow_abbrev] == []


def test_every_option_whose_name_says_secret_declares_how_it_carries_one():
    undeclared = [
        f"{' '.join(words)} {action.option_strings[0]}"
        for words, parser in _leaf_parsers(build_parser())
        for action in parser._actions
        if action.option_strings
        and (SECRET_WORDS & set(action.dest.split("_")) or action.dest.endswith("api_key"))
        and secret_kind(action) is None
    ]
    assert undeclared == []


@pytest.mark.parametrize(
    "words", [pytest.param(words, id=" ".join(words)) for words, _ in _leaf_parsers(build_parser())]
)
def test_an_abbreviated_secret_flag_is_refused_and_its_value_never_shown(faithkit, words):
    for flag in ("--api-k", "--api-ke", "--serv"):
        secret = f"http://me:{PASSWORD}@host/v1" if flag == "--serv" else KEY
        for argv in ([*words, flag, secret], [*words, f"{flag}={secret}"]):
            run = faithkit(*argv)
            assert run.code == 2, (argv, run.err)
            assert words == ("launch",) or len(run.error_lines) == 1, (argv, run.err)  # launch: accelerate's parser
            assert KEY not in run.out + run.err and PASSWORD not in run.out + run.err, run.err


def test_the_flags_every_command_redacts_are_the_declared_secret_flags():
    declared = {
        flag: kind for _, parser in _leaf_parsers(build_parser()) for flag, kind in secret_flags(parser).items()
    }
    assert declared == SECRET_FLAGS


def test_a_secret_is_redacted_in_every_form_a_writer_gives_it():
    redaction.forget_all()
    try:
        redaction.remember(f"https://alice:{PASSWORD}@example.org/v1", "url")
        redaction.remember('k"ey\\x', "value")
        redaction.remember("Authorization: Bearer tok-99\nX-Org: acme-1", "headers")
        assert redaction.redact(f"https://alice:{PASSWORD}@example.org/v1") == "https://***@example.org/v1"
        assert redaction.redact(f"pw={PASSWORD}") == "pw=***"
        assert redaction.redact(json.dumps({"k": 'k"ey\\x'})) == '{"k": "***"}'
        assert redaction.redact("Bearer tok-99 for acme-1, tok-99") == "*** for ***, ***"
        assert redaction.redacted({"list": [PASSWORD, 3], PASSWORD: None}) == {"list": ["***", 3], "***": None}
        redaction.remember("http://example.org/v1", "url")  # no userinfo: nothing secret in it
        assert redaction.redact("http://example.org/v1") == "http://example.org/v1"
    finally:
        redaction.forget_all()


def _files_text(folder: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())


def _rows(tmp_path) -> Path:
    return write_jsonl(
        tmp_path / "rows.jsonl", [{**row, "gold": "Gold.", "label": i % 2} for i, row in enumerate(ROWS)]
    )


def _score(tmp_path, server, model_folder):
    return [
        "score",
        "--metric",
        "llm-judge",
        "--server",
        server,
        "--input",
        _rows(tmp_path),
        "--output",
        tmp_path / "o.jsonl",
    ]


def _candidates(tmp_path, server, model_folder):
    return [
        "candidates", "--server", server, "--model", model_folder, "--input", _rows(tmp_path),
        "--output", tmp_path / "c.jsonl", "--n", "1", "--max-new-tokens", "4",
    ]  # fmt: skip


def _labels(tmp_path, server, model_folder):
    return [
        "meta-eval", "labels", "--input", _rows(tmp_path), "--metrics", "llm-judge", "--server", server,
        "--out", tmp_path / "labels", "--resamples", "10",
    ]  # fmt: skip


def _begin(tmp_path, server, model_folder):
    dev = tmp_path / "begin_dev_wow.tsv"
    dev.write_text(
        "knowledge\tmessage\tresponse\tbegin_label\n"
        + "".join(f"{row['document']}\t{row['history'][0]}\t{row['response']}\t{label}\n" for row, label in
                  zip(ROWS, ("Fully attributable", "Not fully attributable")))
    )  # fmt: skip
    return ["meta-eval", "begin", "--metric", "llm-judge", "--server", server, "--dev", dev, "--out", tmp_path / "b"]


def _q2_wow(tmp_path, server, model_folder):
    consistent = write_wow_csv(tmp_path / "consistent.csv", ["Apples ripen in autumn."], "Apples ripen in autumn.")
    inconsistent = write_wow_csv(tmp_path / "inconsistent.csv", ["They ripen in May."], "Apples ripen in autumn.")
    return [
        "meta-eval", "q2-wow", "--metric", "llm-judge", "--server", server, "--consistent", consistent,
        "--inconsistent", inconsistent, "--out", tmp_path / "q",
    ]  # fmt: skip


def _explain(tmp_path, server, model_folder):
    return [
        "explain",
        "--metric",
        "llm-judge",
        "--server",
        server,
        "--input",
        _rows(tmp_path),
        "--html",
        tmp_path / "e.html",
    ]


def _sweep(tmp_path, server, model_folder):
    config = tmp_path / "sweep.yaml"
    config.write_text(f"server: {server}\nmetrics: [llm-judge]\nstrategies: [plain]\n")
    return [
        "sweep", "--config", config, "--generator", model_folder, "--input", _rows(tmp_path), "--out", tmp_path / "s",
        "--max-new-tokens", "3", "--resamples", "100", "--faithfulness", "llm_judge", "--relevance", "llm_judge",
        "--fluency", "llm_judge",
    ]  # fmt: skip


RUNS = {
    "score": _score,
    "candidates": _candidates,
    "meta-eval labels": _labels,
    "meta-eval begin": _begin,
    "meta-eval q2-wow": _q2_wow,
    "explain": _explain,
    "sweep": _sweep,
}
"""A command line of each command that takes a secret, given a server's URL and a model folder."""


def test_the_commands_that_take_secrets_are_the_ones_run_with_them_here():
    """A new command with a secret option must get a run in :data:`RUNS`, or this fails."""
    taking = {" ".join(words) for words, parser in _leaf_parsers(build_parser()) if secret_flags(parser)}
    assert taking == set(RUNS)


@pytest.mark.parametrize("command", list(RUNS))
def test_every_command_that_takes_a_secret_writes_and_prints_none(
    faithkit, tmp_path, monkeypatch, command, model_folder
):
    """The key by --api-key where the command takes it (else $OPENAI_API_KEY), and a password in --server's URL:
    after the run (or its refusal), no file under the test's folder and no printed line holds either."""
    top = {" agree": -0.1, " disagree": -2.5}
    with FakeEngine(answer="agree", top_logprobs=top) as fake:
        server = fake.url.replace("http://", f"http://me:{PASSWORD}@")
        argv = RUNS[command](tmp_path, server, model_folder)
        if "--api-key" in secret_flags(build_parser(command.split()[0])):
            argv += ["--api-key", KEY]
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        given = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}  # the inputs hold it
        run = faithkit(*argv)
    written = [path for path in tmp_path.rglob("*") if path.is_file() and given.get(path) != path.read_bytes()]
    said = run.out + run.err + "".join(path.read_text(errors="replace") for path in written)
    assert KEY not in said and PASSWORD not in said, run.err
    assert run.code in (0, 2) and "Traceback" not in run.err, run.err
    assert run.code == 0 or len(run.error_lines) == 1, run.err


@pytest.mark.parametrize("how", ["flag", "flag=", "environment", "userinfo"])
def test_score_with_llm_judge_writes_and_prints_no_secret(faithkit, tmp_path, monkeypatch, how):
    with FakeEngine(answer="agree", key=None if how == "userinfo" else KEY) as fake:  # userinfo: basic auth
        server = fake.url.replace("http://", f"http://me:{PASSWORD}@") if how == "userinfo" else fake.url
        argv = _score(tmp_path, server, None)
        if how == "environment" or how == "userinfo":
            monkeypatch.setenv("OPENAI_API_KEY", KEY)
        argv += {"flag": ["--api-key", KEY], "flag=": [f"--api-key={KEY}"]}.get(how, [])
        run = faithkit(*argv)
    assert run.code == 0, run.err
    written = _files_text(tmp_path)
    assert KEY not in written + run.out + run.err and PASSWORD not in written + run.out + run.err
    made_by = json.loads((tmp_path / "o.jsonl.provenance.json").read_text())["provenance"]
    if how == "userinfo":
        assert made_by["models"]["llm-judge --server"]["server"] == fake.url.replace("http://", "http://***@")
    assert "api_key" not in made_by["options"]


def test_a_server_that_is_down_names_its_url_without_the_password(faithkit, tmp_path):
    run = faithkit(
        *_score(tmp_path, f"http://me:{PASSWORD}@127.0.0.1:9/v1", None), "--api-key", KEY, "--chunk-size", "1"
    )
    assert run.code == 2 and run.error_lines == run.err.splitlines(), run.err
    assert run.err.startswith("error: http://***@127.0.0.1:9/v1: listing its models (GET /models): cannot connect")
    assert PASSWORD not in run.err + _files_text(tmp_path)


def test_a_short_secret_is_redacted_as_a_word_never_inside_one():
    redaction.forget_all()
    try:
        redaction.remember("x", "value")  # llama.cpp's placeholder key
        assert redaction.redact('{"max_new_tokens": 5, "key": "x"}') == '{"max_new_tokens": 5, "key": "***"}'
        assert redaction.redacted({"context_tokens": "x y"}) == {"context_tokens": "*** y"}
    finally:
        redaction.forget_all()


def test_another_command_s_own_flag_is_not_taken_for_an_abbreviated_secret_flag():
    redaction.forget_all()
    try:
        remember_secrets(build_parser(), ["annotate", "build", "--a", "plain", "--b", "pmi", "--api-k", "sk-123"])
        assert redaction.redact("plain vs pmi, sk-123") == "plain vs pmi, ***"
    finally:
        redaction.forget_all()
