"""Fixtures of the command-line tests: run ``faithkit.cli.main`` as a user would, and a saved tiny model.

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


@pytest.fixture(scope="session")
def model_folder(tmp_path_factory, tiny_gpt2, gpt2_tokenizer) -> str:
    """The tiny random GPT-2 of tests/conftest.py saved as a folder, as a user passes ``--model``."""
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tiny_gpt2.save_pretrained(folder)
    gpt2_tokenizer.save_pretrained(folder)
    return str(folder)
