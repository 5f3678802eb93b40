"""The ``faithkit`` command: one module per command, each with ``register(subparsers)`` and ``run(args) -> int``.

Imports flow one way, from here into the library. Every user mistake arrives here as a
:class:`~faithkit.errors.FaithkitError` and leaves as one ``error: …`` line with exit status 2,
and so does a write the system refuses (a full disk, a read-only folder: ENOSPC, EDQUOT, EROFS,
EIO); Ctrl-C during a job leaves as one line with status 130, SIGTERM likewise with 143. Diagnostics go through ``logging``,
which :func:`main` configures (``--quiet`` / ``--verbose``); under ``accelerate launch`` only
the main process prints them, and the one error line.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import re
import shlex
import signal
import sys
import textwrap
import threading
import time
from contextlib import contextmanager

from .. import __version__, provenance
from ..settings import redaction
from ..errors import FaithkitError
from ..data.jobs import is_main_process
from ..settings.options import FlagError

COMMANDS = (
    "score",
    "generate",
    "candidates",
    "rerank",
    "sweep",
    "meta_eval",
    "explain",
    "data",
    "train",
    "checker",
    "annotate",
    "launch",
)
"""Modules of this package, one per command, in the order ``--help`` lists them."""


START_HERE = """start here, in the checkout (offline; `make demo` installs what is missing, then runs it):
  faithkit score --metric pmi-faith --model smollm2-135m --input examples/demo.jsonl --output demo_scores.jsonl
scores the six hand-written responses of examples/demo.jsonl for faithfulness; then see
'faithkit COMMAND --help', e.g. 'faithkit sweep --help' to choose a decoding strategy."""
"""The end of ``faithkit --help``: the demo command, as the README's quick start runs it."""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but an option's help keeps its line breaks, each line wrapped on its own (an indented
    line's continuation indented two more), so a help can list choices one per line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        lines = []
        for line in text.splitlines():
            indent = " " * (len(line) - len(line.lstrip()))
            words = " ".join(line.split())
            wrapped = textwrap.wrap(
                words,
                width,
                initial_indent=indent,
                subsequent_indent=indent + "  " * bool(indent),
                break_on_hyphens=False,
            )
            lines += wrapped or [""]
        return lines


class Parser(argparse.ArgumentParser):
    """argparse with faithkit's error contract: a mistake is one ``error: …`` line (no usage block) and exit 2,
    and a value such as ``-1e-3`` is a negative number, not an option. Helps keep their line breaks
    (:class:`HelpFormatter`). No flag may be abbreviated (``--api-k`` is no ``--api-key``): a prefix would take a
    value under a name no check knows, and one more flag would change what an old command line means."""

    def __init__(self, *args, **kwargs):
        kwargs["allow_abbrev"] = False
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-inf$|^-nan$")

    def error(self, message: str):
        hint = "" if message.startswith("argument ") else f"; see {self.prog} --help"  # a bad value says it all
        if not is_main_process():
            _leave_the_mistake_to_the_main_process()
        self.exit(2, f"error: {self.prog}: {message}{hint}\n" if is_main_process() else None)


MAIN_PROCESS_WAIT = 60.0
"""Seconds that a process other than the main one of ``accelerate launch`` waits, after a mistake, to be stopped."""


def _leave_the_mistake_to_the_main_process() -> None:
    """Under ``accelerate launch`` every process meets the same mistake and only the main one says it, but the
    launcher stops all processes as soon as one of them fails. The others wait here to be stopped, so that the main
    process fails first, having said the mistake: one found on the command line takes less time than the
    processes' start-ups differ by."""
    time.sleep(MAIN_PROCESS_WAIT)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or only that of ``command`` (as typed, e.g. ``meta-eval``).

    :func:`main` builds only the command it runs: some commands' options come from library declarations that import
    torch and transformers (the decoding strategies' fields), which the other commands, a mistake found on the
    command line and a command's ``--help`` need not wait for (under ``accelerate launch``, in every process)."""
    parser = Parser(
        prog="faithkit",
        description="Faithful document-grounded dialogue: score responses (PMI-FAITH, Q², baselines),\n"
        "decode with PMI-DECODE, meta-evaluate metrics against human labels, and export corpora.",
        epilog=START_HERE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"faithkit {__version__}")
    verbosity = parser.add_mutually_exclusive_group()
    verbosity.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    verbosity.add_argument("-v", "--verbose", action="store_true", help="print debugging details")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        if command in (None, _command_name(name)):
            importlib.import_module(f"{__name__}.{name}").register(subparsers)
    return parser


def changed_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """The options of the command ``args`` ran that differ from their defaults (given, or from a config file
    where the command reads one later), by destination name, for :mod:`faithkit.provenance`; an API key is none
    of them (its option declares it a secret value)."""
    changed = {}
    for action in _command_actions(parser, args):
        if action.dest in ("help", "version", "quiet", "verbose") or isinstance(action, argparse._SubParsersAction):
            continue
        if secret_kind(action) == "value":
            continue
        if action.default is argparse.SUPPRESS:
            if hasattr(args, action.dest):
                changed[action.dest] = getattr(args, action.dest)
        elif getattr(args, action.dest, action.default) != action.default:
            changed[action.dest] = getattr(args, action.dest)
    return changed


def _command_actions(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[argparse.Action]:
    """The actions of the parser and of each subcommand's parser chosen on the way down to the one that ran."""
    actions = list(parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                actions += _command_actions(action.choices[chosen], args)
    return actions


def secret_kind(action: argparse.Action) -> str | None:
    """How the flag's value carries a secret, as its option declares (:data:`faithkit.settings.redaction.KINDS`), or None."""
    owners: list = getattr(action, "declared", ([], None))[0]
    return next((item.metadata["secret"] for _, item in owners if item.metadata.get("secret")), None)


def secret_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Every flag of ``parser`` and its commands whose option declares a secret: ``{"--api-key": "value", …}``."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found.update(secret_flags(command))
        elif (kind := secret_kind(action)) is not None:
            found.update(dict.fromkeys(action.option_strings, kind))
    return found


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every flag of ``parser`` and its commands."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                found |= option_strings(command)
        found.update(action.option_strings)
    return found


SECRET_FLAGS = {"--server": "url", "--api-key": "value"}
"""The secret flags of every command, by the kind of secret (``tests/cli/test_secrets.py`` checks this against the
declarations): a command that has none of them still redacts what follows one typed to it by mistake."""


def remember_secrets(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Hand :mod:`faithkit.settings.redaction` the value of every secret flag in ``argv`` before it is parsed: written whole
    (``--api-key KEY``, ``--api-key=KEY``) or as any prefix of one (``--api-k KEY``, which the parser refuses in an
    error line that names the words it did not take), whether or not the command takes it, so no line or file
    shows it."""
    flags = {**SECRET_FLAGS, **secret_flags(parser)}
    exact = option_strings(parser) - set(flags)  # another command's own flag (annotate's --a), not an abbreviation
    for index, word in enumerate(argv):
        name, equals, value = word.partition("=")
        if not name.startswith("--") or len(name) < 3 or name in exact:
            continue
        kinds = {kind for flag, kind in flags.items() if flag.startswith(name)}
        given = value if equals else argv[index + 1] if index + 1 < len(argv) else None
        for kind in kinds:
            redaction.remember(given, kind)


def _command_name(module: str) -> str:
    return module.replace("_", "-")


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (faithkit's own options take no value),
    or None when that is no command (argparse then lists the commands)."""
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    return word if word in {_command_name(command) for command in COMMANDS} else None


def configure_logging(quiet: bool = False, verbose: bool = False) -> None:
    """Plain ``warning: …`` lines on stderr from the main process; other processes report only errors."""
    level = logging.ERROR if quiet or not is_main_process() else logging.DEBUG if verbose else logging.INFO
    if not is_main_process():  # nor draw transformers' progress bars (the hub's with them)
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    root = logging.getLogger("faithkit")
    root.handlers[:] = [handler]
    root.setLevel(level)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        return message if record.levelno == logging.INFO else f"{record.levelname.lower()}: {message}"


WRITE_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}
"""What the system answers when a write cannot be done (full disk, quota, read-only mount, failing device)."""


def main(argv: list[str] | None = None) -> int:
    """Run ``faithkit ARGV``; everything it prints and writes has its secrets redacted (:mod:`faithkit.settings.redaction`).

    Run as the program (no ``argv``: the ``faithkit`` command, ``python -m faithkit``), a run stopped by Ctrl-C or
    SIGTERM ends the process as soon as it has said so: its rows are synced and its lock released by then, and the
    interpreter's teardown (seconds with torch loaded, on a busy machine) is skipped."""
    as_program = argv is None
    argv = sys.argv[1:] if argv is None else argv
    redaction.forget_all()
    with redaction.redacting_streams():
        status = _main(argv)
    if as_program and status in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _main(argv: list[str]) -> int:
    """The command of ``argv``, its user mistakes said in one line, Ctrl-C and SIGTERM as :func:`_stopped` says."""
    from ..data.jobs import JobInterrupted

    with _sigterm_as_interrupt() as terminated:
        try:
            configure_logging()  # what parsing warns of (a renamed metric) is a warning line too
            parser = build_parser(_named_command(argv))
            remember_secrets(parser, argv)
            args = parser.parse_args(argv)
            configure_logging(args.quiet, args.verbose)
            provenance.note_invocation(argv, changed_options(parser, args))
            from .declared_files import check_declared_files

            check_declared_files(args)
            return args.run(args)
        except KeyboardInterrupt:
            return _stopped("terminated" if terminated else "interrupted", argv, terminated)
        except JobInterrupted as interrupted:
            return _stopped(str(interrupted), argv, terminated)
        except FaithkitError as error:
            if isinstance(error, FlagError):  # as the parser says a bad value
                return _say_the_mistake(f"faithkit {args.command}: {error}")
            return _say_the_mistake(error)
        except OSError as error:
            if error.errno not in WRITE_FAILURES:
                raise
            return _say_the_mistake(
                f"cannot write {error.filename or 'an output'}: {error.strerror}; the files "
                f"written before stay as they are: free space (or fix the folder) and rerun "
                f"the same command"
            )


def _stopped(said: str, argv: list[str], terminated: list[int]) -> int:
    """Ctrl-C (130) or SIGTERM (143), in one line: what a job saved (``said``: ``interrupted: 4 rows are in OUT;
    rerun the same command to continue``), and that command (``--restart``, which would start over, left out)."""
    if is_main_process():
        again = shlex.join(["faithkit", *(arg for arg in argv if arg != "--restart")])
        continues = (
            "" if said.endswith("rerun the same command to continue") else "; rerun the same command to continue"
        )
        print(f"{said}{continues}: {again}", file=sys.stderr)
    return 143 if terminated else 130


def _say_the_mistake(message) -> int:
    if is_main_process():  # under accelerate launch every process meets the same mistake: say it once
        print(f"error: {message}", file=sys.stderr)
    else:
        _leave_the_mistake_to_the_main_process()
    return 2


@contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (``kill``, a scheduler's time limit) stops a command as Ctrl-C does: a job says what is saved and
    how to continue. Yields a list that holds the signal once it came. The handler can only be set from the main
    thread; elsewhere SIGTERM keeps its default."""
    terminated: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield terminated
        return

    def stop(signum, frame):
        terminated.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield terminated
    finally:
        signal.signal(signal.SIGTERM, previous)
