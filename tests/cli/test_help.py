"""Every command's --help: complete, exits 0, and says what it writes."""

import pytest

from faithkit import __version__


@pytest.mark.parametrize(
    "command, says",
    [
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
        (
            [],
            "start here, in the checkout (offline; `make demo` installs what is missing, then runs it):\n  faithkit score "
            "--metric pmi-faith --model smollm2-135m --input examples/demo.jsonl --output demo_scores.jsonl\n",
        ),
        (["score"], "which metric to compute (default pmi-faith)"),
        (["score"], "form: words per response, and the shares of empty and looping responses (no model)"),
        (
            ["score"],
            "rows to score (.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or hf:OWNER/NAME with --split)",
        ),
        (["generate"], "(.jsonl, .csv, .tsv, .parquet, a save_to_disk folder or hf:OWNER/NAME with --split)"),
        (["data", "export"], "topicalchat: train, valid_freq, valid_rare, test_freq, test_rare"),
    ],
)
def test_help_is_complete(faithkit, command, says):
    run = faithkit(*command, "--help")
    assert run.code == 0 and run.err == ""
    assert run.out.startswith("usage: faithkit") and "--help" in run.out
    assert says in run.out if "\n" in says else says in " ".join(run.out.split())  # argparse wraps lines


def test_sweep_usage_names_the_measures_once(faithkit):
    run = faithkit("sweep", "--help")
    usage = run.out.split("\n\n")[0]
    assert "--faithfulness MEASURE" in usage and "pmi_faith" not in usage
    assert " ".join(run.out.split()).count("pmi_faith, fluency, minimal_edit, faith_judge, q2") == 1


def test_launch_help_says_what_faithkit_adds_before_accelerates(faithkit):
    run = faithkit("launch", "--help")
    assert run.code == 0 and run.out.startswith("faithkit launch: Takes exactly the arguments of 'accelerate launch'")
    assert "Its arguments, as accelerate launch takes them:\n\nusage: " in run.out


def test_version(faithkit):
    run = faithkit("--version")
    assert run.code == 0 and run.out == f"faithkit {__version__}\n"


def test_a_missing_command_is_argparses_error(faithkit):
    run = faithkit()
    assert run.code == 2
    assert run.err == "error: faithkit: the following arguments are required: COMMAND; see faithkit --help\n"
