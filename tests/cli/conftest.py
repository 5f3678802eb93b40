"""Fixtures of the command-line tests: run ``faithkit.cli.main`` as a user would.

``faithkit`` returns the exit status with what went to stdout and stderr, also for
argparse's own errors (which leave through SystemExit).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from .helpers import run_main


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("error: ")]


@pytest.fixture
def faithkit(capsys):
    def run(*argv) -> Run:
        capsys.readouterr()  # only this command's output
        try:
            code = run_main(*argv)
        except SystemExit as stop:  # argparse: usage errors exit 2, --help exits 0
            code = stop.code
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run
