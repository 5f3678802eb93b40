"""Every command's --help: complete, exits 0, and says what it writes."""

import re

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
        (["score"], "which metrics to compute, comma-separated: one output holds every metric's scores"),
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


def test_sweep_help_is_short_and_groups_its_options(faithkit):
    run = faithkit("sweep", "--help")
    usage = run.out.split("\n\n")[0]
    assert usage == (
        "usage: faithkit sweep --generator MODEL --scoring-model MODEL --input ROWS --out DIR [options]\n"
        "       faithkit sweep --config FILE.yaml [options]"
    )
    said = " ".join(run.out.split())
    assert "pmi_faith, fluency, minimal_edit" not in said  # a wrong --faithfulness lists the measures (test_sweep.py)
    assert (
        "--faithfulness MEASURE measure best.json maximises and Table 5 shows first: a score key of --metrics" in said
    )
    sections = [line for line in run.out.splitlines() if line and not line.startswith(" ") and line.endswith(":")]
    assert sections[:5] == ["options:", "what to run:", "grid and decoding:", "judging and choosing:", "device:"]
    assert len(run.out.splitlines()) <= 140  # 170 before the usage line and the description were cut


def test_the_scoring_model_s_help_says_it_drives_pmi_faith_and_faith_judge(faithkit):
    help_text = " ".join(faithkit("sweep", "--help").out.split())
    assert "--scoring-model MODEL causal LM the metrics score with: PMI-FAITH, fluency, faith-judge" in help_text


def test_score_help_lists_the_metrics_one_per_line(faithkit):
    from faithkit.metrics.registry import METRICS

    lines = faithkit("score", "--help").out.splitlines()
    first = next(i for i, line in enumerate(lines) if "to the metrics that take it (default pmi-faith)" in line)
    listed = [line[26:].partition(":")[0] for line in lines[first + 1 :] if re.match(r" {26}\S", line)]
    assert listed[: len(METRICS)] == list(METRICS)  # each its line, its description wrapped below it indented more


HEAVY = ("torch", "scipy", "transformers", "numpy", "accelerate", "matplotlib", "pandas", "datasets")
"""Modules that take seconds to import: no command's --help may need them."""


def test_no_help_imports_torch_scipy_or_transformers():
    """Every command's --help (launch's is accelerate's own) in one fresh process, then the modules it imported:
    the import graph, not a time, so the test holds on a busy machine."""
    import subprocess
    import sys

    from .helpers import subprocess_env

    commands = [[], *([c] for c in ("score", "generate", "rerank", "sweep", "explain", "train", "annotate"))]
    commands += [["meta-eval", b] for b in ("begin", "q2-wow", "system-level", "labels")] + [["data", "export"]]
    program = f"""
import contextlib, io, sys
from faithkit.cli import main
for command in {commands!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            main([*command, "--help"])
        except SystemExit as stop:
            assert stop.code == 0, command
    assert out.getvalue().startswith("usage: faithkit"), command
print(sorted({{name.partition(".")[0] for name in sys.modules}} & set({HEAVY!r})))
"""
    run = subprocess.run([sys.executable, "-c", program], env=subprocess_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[]\n"


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
