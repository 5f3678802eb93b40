"""Every request to a server is bounded (issue 52, case 5), against fake local servers (tests/cli/fake_engine.py):
a total deadline that a server trickling its reply cannot stretch, a reply cap from --max-new-tokens, SIGTERM and
Ctrl-C that end a run waiting on a silent server within 2 s (rows kept, the command that continues printed, no
traceback, no thread left to wait for), --extra-body refused where it would set faithkit's own request fields, and
a server's error body that repeats the credentials never reaching stderr.
"""

from __future__ import annotations

import base64
import shlex
import signal
import time

import pytest

from faithkit.data import read_results
from faithkit.serving.engine import reply_cap

from .fake_engine import FakeEngine
from .helpers import start_faithkit, write_jsonl
from .test_interrupt import _wait_for_records

ROWS = [{"id": f"r{i}", "document": f"Pears number {i} ripen late.", "history": ["When?"]} for i in range(3)]
KEY = "sk-echo-55e1"


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", ROWS)


def _candidates(url, model_folder, rows, output, *extra):
    return [
        "candidates", "--server", url, "--model", model_folder, "--input", rows, "--output", output, "--n", "1",
        "--max-new-tokens", "8", "--retries", "0", *extra,
    ]  # fmt: skip


def test_a_server_that_trickles_its_reply_is_cut_off_at_the_timeout(faithkit, model_folder, rows, tmp_path):
    """The reply (headers included) comes one byte every 0.5 s, so each read gets a byte well within any per-read
    timeout: only a deadline on the whole request ends it (the whole reply would take over a minute)."""
    with FakeEngine("trickle", delay=0.5) as server:
        began = time.monotonic()
        run = faithkit(*_candidates(server.url, model_folder, rows, tmp_path / "c.jsonl", "--timeout", "1"))
        took = time.monotonic() - began
    assert run.code == 2 and run.error_lines == run.err.splitlines()[-1:], run.err
    assert run.error_lines[0] == (
        f"error: {server.url}: listing its models (GET /models): no whole reply within --timeout 1 s (connecting "
        "and the whole reply), after 0 retries; raise --timeout or lower --concurrency"
    )
    assert took < 20, took  # the command's start (a tokenizer) and 1 s of the server


def test_a_completion_that_trickles_is_cut_off_at_its_deadline_then_retried():
    """The completion path (the models' list comes whole): each attempt ends at --timeout, and one retry follows."""
    from faithkit.serving.engine import Engine, EngineOptions
    from faithkit.errors import ServerError

    with FakeEngine("ok") as server:
        engine = Engine(server.url, None, "none", EngineOptions(timeout=0.5, retries=1))
        server.behaviour, server.delay = "trickle", 0.05
        began = time.monotonic()
        with pytest.raises(ServerError, match=r"no whole reply within --timeout 0.5 s .*, after 1 retries"):
            engine.ask([1, 2, 3], 8, 0.0, 1.0, 0)
        took = time.monotonic() - began
        assert len(server.requests) == 2
    assert 1.0 <= took < 3.0, took  # two attempts of 0.5 s and the pause between them


def test_a_reply_longer_than_max_new_tokens_allows_is_refused(faithkit, model_folder, rows, tmp_path):
    output = tmp_path / "c.jsonl"
    with FakeEngine("flood", flood=5_000_000) as server:
        run = faithkit(*_candidates(server.url, model_folder, rows, output))
    cap = reply_cap(8)
    assert run.code == 2 and run.error_lines == [
        f"error: {server.url}: asking for a completion (POST /completions): the reply is over {cap:,} bytes, more "
        "than its max_tokens can take; is --server an OpenAI-compatible API that keeps to max_tokens?"
    ], run.err
    assert cap == 64 * 1024 + 8 * 1024 and not output.exists()  # a run that stops before its first row
    assert sum(path.stat().st_size for path in tmp_path.iterdir()) < 100_000


@pytest.mark.parametrize("fields", [["prompt", "model", "n"], ["max_tokens"], ["messages", "stream"]])
def test_extra_body_may_not_set_the_fields_faithkit_sets(faithkit, model_folder, rows, tmp_path, fields):
    body = '{"repeat_penalty": 1, ' + ", ".join(f'"{name}": 50' for name in fields) + "}"
    run = faithkit(
        *_candidates("http://127.0.0.1:9/v1", model_folder, rows, tmp_path / "c.jsonl", "--extra-body", body)
    )
    assert run.code == 2 and run.err == (
        f"error: faithkit candidates: argument --extra-body: sets {', '.join(fields)}, which faithkit sets itself "
        "(the model, prompt and sampling come from their own options); drop them\n"
    )


def test_every_field_faithkit_sends_is_one_extra_body_may_not_set():
    """The refused fields are read off the requests faithkit actually sends (completion and chat, with and without
    log-probabilities), so a field a later version sends is refused too, or this fails."""
    from faithkit.errors import ConfigError
    from faithkit.serving.engine import REQUEST_FIELDS, Engine, EngineOptions, check_extra_body

    with FakeEngine("ok", answer=" agree", top_logprobs={" agree": -0.1}) as server:
        engine = Engine(server.url, None, "none", EngineOptions(retries=0))
        for prompt in ([1, 2, 3], [{"role": "user", "content": "Hi?"}]):
            for top_logprobs in (0, 2):
                engine.reply(prompt, 4, 0.7, 0.9, 3, {"repeat_penalty": 1.1}, top_logprobs=top_logprobs)
    sent = {name for body in server.requests for name in body} - {"repeat_penalty"}
    assert len(server.requests) == 4 and {"model", "prompt", "messages", "logprobs", "top_logprobs"} <= sent
    assert sent <= set(REQUEST_FIELDS), sent - set(REQUEST_FIELDS)
    for name in sent:
        with pytest.raises(ConfigError, match=f"^sets {name}, which faithkit sets itself"):
            check_extra_body({name: 1})
    assert all(body["repeat_penalty"] == 1.1 for body in server.requests)  # what faithkit does not set passes


@pytest.mark.parametrize("how", ["bearer", "basic"])
def test_an_error_body_that_repeats_the_credentials_never_reaches_stderr(faithkit, model_folder, rows, tmp_path, how):
    basic = base64.b64encode(f"me:{KEY}".encode()).decode()
    with FakeEngine("echo") as server:
        url = server.url.replace("http://", f"http://me:{KEY}@") if how == "basic" else server.url
        extra = ("--api-key", KEY) if how == "bearer" else ()
        run = faithkit(*_candidates(url, model_folder, rows, tmp_path / "c.jsonl", *extra))
    assert run.code == 2 and len(run.error_lines) == 1, run.err
    assert "HTTP 500" in run.err and "authorization: ***" in run.err.lower(), run.err
    written = "".join(path.read_text() for path in tmp_path.rglob("*") if path.is_file())
    assert KEY not in run.err + run.out + written and basic not in run.err + run.out + written


@pytest.mark.slow  # a faithkit subprocess
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_a_run_waiting_on_a_silent_server_within_2_s(model_folder, rows, tmp_path, signum, status):
    """Two rows answered, then the server says nothing (--timeout 300): the signal ends the run within 2 s, with
    the two rows kept, the command that continues said, and no thread left that the process would wait for."""
    output = tmp_path / "c.jsonl"
    with FakeEngine("hang", answers=4) as server:  # two requests a row: greedy and one sample
        argv = _candidates(server.url, model_folder, rows, output, "--timeout", "300", "--chunk-size", "1")
        process = start_faithkit(*argv)
        try:
            _wait_for_records(process, output, 2)
            while len(server.requests) < 5:  # the third row's requests are in flight
                time.sleep(0.02)
            began = time.monotonic()
            process.send_signal(signum)
            _, err = process.communicate(timeout=30)
            took = time.monotonic() - began
        finally:
            process.kill()
    assert process.returncode == status and took < 2, (took, err)
    assert "Traceback" not in err and len(read_results(output)) == 2
    assert err.splitlines()[-1] == (
        f"interrupted: 2 rows are in {output}; rerun the same command to continue: faithkit {shlex.join(map(str, argv))}"
    )
