"""`faithkit launch` is `accelerate launch` ending with the program's own last line and exit status."""

import subprocess
import sys

import pytest

from .helpers import ROOT, free_port, subprocess_env

pytestmark = pytest.mark.slow  # faithkit launch subprocesses

QUIET_DEFAULTS = ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]


def _launch(*argv, defaults=QUIET_DEFAULTS) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "faithkit", "launch", *defaults, *argv],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_user_mistake_under_launch_ends_with_faithkits_line_and_status(tmp_path):
    missing = tmp_path / "nope.yaml"
    run = _launch("--num_processes", "1", "train.py", "--config", missing, "--output-dir", tmp_path / "x")
    assert run.returncode == 2
    assert run.stderr.splitlines()[-1] == f"error: faithkit train: argument --config: file not found: {missing}"
    assert "Traceback" not in run.stderr and "CalledProcessError" not in run.stderr


def test_accelerates_notice_of_its_defaults_is_not_printed(tmp_path):
    missing = tmp_path / "nope.yaml"
    run = _launch("train.py", "--config", missing, "--output-dir", tmp_path / "x", defaults=[])
    assert run.returncode == 2
    assert "had defaults used instead" not in run.stderr and "num_machines" not in run.stderr
    assert run.stderr.splitlines()[-1] == f"error: faithkit train: argument --config: file not found: {missing}"


LATE_MAIN_PROCESS = """
import os, sys, time
from faithkit.cli import main
if os.environ["RANK"] == "0":
    time.sleep(2)  # the main process starts last; the launcher stops every process when the first one fails
sys.exit(main(sys.argv[1:]))
"""


def test_two_processes_say_the_mistake_once_and_nothing_after_it(tmp_path):
    missing, program = tmp_path / "nope.jsonl", tmp_path / "late_main_process.py"
    program.write_text(LATE_MAIN_PROCESS)
    run = _launch(
        "--multi_gpu",
        "--num_processes",
        "2",
        "--main_process_port",
        str(free_port()),
        program,
        "score",
        "--metric",
        "overlap-f1",
        "--input",
        missing,
        "--output",
        tmp_path / "o.jsonl",
    )
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [f"error: faithkit score: argument --input: file not found: {missing}"]
