"""Every command's --help: complete, exits 0, and says what it writes."""

import pytest

from faithkit import __version__


@pytest.mark.parametrize("command, says", [
    ([], "meta-eval"),
    (["score"], "continues where it stopped"),
    (["generate"], "'gold'"),
    (["rerank"], "'candidate' index"),
    (["meta-eval"], "system-level"),
    (["meta-eval", "begin"], "roc_dev.png / roc_test.png"),
    (["meta-eval", "q2-wow"], "histograms.png"),
    (["meta-eval", "system-level"], "--paired"),
    (["explain"], "--scores-output"),
    (["data", "export"], "--history-turns"),
])
def test_help_is_complete(faithkit, command, says):
    run = faithkit(*command, "--help")
    assert run.code == 0 and run.err == ""
    assert run.out.startswith("usage: faithkit") and "--help" in run.out
    assert says in " ".join(run.out.split())  # argparse wraps lines


def test_version(faithkit):
    run = faithkit("--version")
    assert run.code == 0 and run.out == f"faithkit {__version__}\n"


def test_a_missing_command_is_argparses_error(faithkit):
    run = faithkit()
    assert run.code == 2
    assert run.err == "error: faithkit: the following arguments are required: COMMAND; see faithkit --help\n"
