"""What each command reads and writes, declared once beside its options and checked before it runs.

Every command that runs registers a :class:`Files` with :func:`declare_files`: ``reads(args)``
lists the files and folders it reads (rows, corpora folders, configs, candidates, chosen files,
models; None for one not given) and ``writes(args)`` the outputs it writes, each with the flag
that names it. :func:`faithkit.cli.main` hands them to :func:`check_declared_files` before the
command runs, so no command can write over what it reads because it forgot the check
(``tests/cli/test_declared_files.py`` walks the parser for commands without a declaration).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..errors import OutputError


class Output(NamedTuple):
    """One output of a command: the ``flag`` that names it, its ``path``, and whether it is a ``folder`` written into."""

    flag: str
    path: str | Path | None
    folder: bool = False


@dataclass(frozen=True)
class Files:
    """A command's declaration: ``reads(args)`` -> paths it reads, ``writes(args)`` -> its :class:`Output` s."""

    reads: Callable[[argparse.Namespace], Iterable[str | Path | None]]
    writes: Callable[[argparse.Namespace], Iterable[Output]]


WRITES_NOTHING = Files(reads=lambda args: (), writes=lambda args: ())
"""The declaration of a command that writes no file itself (``launch`` runs another command, which checks its own)."""


def declare_files(parser: argparse.ArgumentParser, files: Files) -> None:
    parser.set_defaults(files=files)


def check_declared_files(args: argparse.Namespace) -> None:
    """An :class:`OutputError` when an output of ``args``' command is one of its inputs, a sidecar of one, holds
    one, or lies in a folder it reads (a corpus, a model); see :func:`refuse_writing_inputs`."""
    from .shared_flags import (
        refuse_shared_outputs,
        refuse_writing_inputs,
        with_sidecars,
    )  # torch-free --help: not earlier

    files: Files | None = getattr(args, "files", None)
    if files is None:
        return
    outputs = [output for output in files.writes(args) if output.path not in (None, "")]
    if not outputs:
        return
    read = [Path(path) for path in files.reads(args) if path not in (None, "")]
    read_files = [sidecar for path in read if path.is_file() for sidecar in with_sidecars(path) if sidecar.is_file()]
    refuse_shared_outputs({output.flag: output.path for output in outputs if not output.folder})
    for output in outputs:
        if output.folder:
            refuse_writing_inputs(read_files, output.flag, folder=output.path)
        else:
            refuse_writing_inputs(read_files, output.flag, outputs=[output.path])
        for folder in (path for path in read if path.is_dir()):
            _refuse_writing_into(folder, output)


def _refuse_writing_into(folder: Path, output: Output) -> None:
    """An output may not replace anything in a folder the command reads, nor be a folder that holds it."""
    out = Path(output.path)  # type: ignore[arg-type]
    inside = folder.resolve()
    if inside.is_relative_to(out.resolve()):
        relation = "is" if inside == out.resolve() else "holds"
        raise OutputError(
            f"{output.flag} {out} {relation} {folder}, which this command reads, and writing there would "
            f"change or remove it; choose another {output.flag}"
        )
    from .shared_flags import with_sidecars

    for path in [out] if output.folder else with_sidecars(out):
        if (path.exists() or path.is_symlink()) and path.resolve().is_relative_to(inside):
            raise OutputError(
                f"{output.flag} {out} is {'in' if path == out else f'written beside {path.name}, in'} {folder}, "
                f"which this command reads, and writing there would replace {path.resolve()}; choose another "
                f"{output.flag}"
            )
