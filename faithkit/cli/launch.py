"""``faithkit launch …``: ``accelerate launch …`` whose failures end, like faithkit's own, with the program's one line.

accelerate's launcher follows a failed program's ``error: …`` line with a traceback of its own
(``CalledProcessError`` for one process, torch elastic's ``ChildFailedError`` report for
several) and exits 1; Ctrl-C adds its ``KeyboardInterrupt`` traceback. ``accelerate launch
--quiet`` hides the first for one process only. This runs the same launcher with the same
arguments, and when the program fails or is interrupted, exits with the program's status and
adds nothing after the program's last line.
"""

from __future__ import annotations

import argparse
import logging
import os
import textwrap
from dataclasses import dataclass

from ..settings.options import add_flags, option


DESCRIPTION = (
    "Takes exactly the arguments of 'accelerate launch', e.g. 'faithkit launch --multi_gpu "
    "--num_processes 2 -m faithkit score …' or 'faithkit launch train.py --config …'. When the program "
    "fails or Ctrl-C stops it, its own last line stays the last thing printed and its exit status (2 for "
    "a user mistake, 130 for Ctrl-C) is returned."
)


@dataclass
class LaunchArguments:
    arguments: list[str] | None = option(
        None, "arguments of accelerate launch", positional=True, nargs=argparse.REMAINDER
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "launch",
        help="accelerate launch, ending with faithkit's own line when the program fails",
        description=DESCRIPTION,
        prefix_chars="+",
        add_help=False,  # every argument, options and --help included, goes to accelerate
    )
    add_flags(parser, LaunchArguments)
    parser.set_defaults(run=run)
    from .declared_files import WRITES_NOTHING, declare_files

    declare_files(parser, WRITES_NOTHING)  # the program it launches checks its own


def run(args) -> int:
    import subprocess

    import torch.distributed.run  # noqa: F401  (creates torch elastic's loggers, silenced below)
    from accelerate.commands.launch import launch_command, launch_command_parser
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    if args.arguments[:1] in (["-h"], ["--help"]):  # accelerate's help says nothing of faithkit: say it first
        print(
            textwrap.fill(f"faithkit launch: {DESCRIPTION}", 100) + "\n\nIts arguments, as accelerate launch "
            "takes them:\n",
            flush=True,
        )
    from ..serving.third_party import quiet_loggers

    quiet_loggers()  # accelerate's notice of the defaults it used
    launch_args = launch_command_parser().parse_args(args.arguments)
    launch_args.quiet = False  # with --quiet, accelerate exits 1 whatever the program's status was
    for name in list(logging.root.manager.loggerDict):  # each has its own level: its reports repeat the failure
        if name.startswith("torch.distributed.elastic"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        launch_command(launch_args)
    except subprocess.CalledProcessError as failed:
        return failed.returncode
    except ChildFailedError as failed:
        code = failed.get_first_failure()[1].exitcode
        return code if code > 0 else 128 - code  # killed by a signal: the shell's 128 + signal number
    except KeyboardInterrupt:
        _wait_for_programs()
        return 130
    except SignalException as stopped:  # torch elastic's handler of SIGINT, SIGTERM, ...: 130, 143, ...
        _wait_for_programs()
        return 128 + int(stopped.sigval)
    return 0


def _wait_for_programs() -> None:
    """After Ctrl-C, wait until the launched processes have written their last line and exited."""
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except KeyboardInterrupt:
            continue
