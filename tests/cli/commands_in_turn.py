"""Several faithkit commands in turn, in each process of one ``accelerate launch`` (for tests/cli/test_parallel.py).

Every process of a launch spends about 9 s of CPU importing torch and transformers before its command starts; the
data-parallel tests' commands share one launch's start-up instead of paying it once each. Each command's standard
output and error (file descriptors 1 and 2, so also what transformers' progress bars and handlers write) go to
``FOLDER/NAME.RANK.out`` and ``FOLDER/NAME.RANK.err``, its exit status to ``FOLDER/NAME.RANK.status``. A command that
fails ends its process with its status, and the launcher then stops the other processes.

    accelerate launch … commands_in_turn.py FOLDER COMMANDS.json   # {"NAME": [faithkit's arguments], …}
"""

import json
import os
import sys
from pathlib import Path

from faithkit.cli import main


def run_in_turn(folder: Path, commands: dict[str, list[str]]) -> int:
    rank = os.environ.get("RANK", "0")
    for name, argv in commands.items():
        with open(folder / f"{name}.{rank}.out", "w") as out, open(folder / f"{name}.{rank}.err", "w") as err:
            code = _redirected(out, err, argv)
        (folder / f"{name}.{rank}.status").write_text(str(code))
        if code:
            return code
    return 0


def _redirected(out, err, argv: list[str]) -> int:
    """``faithkit ARGV`` with file descriptors 1 and 2 on ``out`` and ``err``; its exit status."""
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    _flush_and_point(1, out.fileno())
    _flush_and_point(2, err.fileno())
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's mistakes
        return stop.code
    finally:
        for fd, original in saved.items():
            _flush_and_point(fd, original)
            os.close(original)


def _flush_and_point(fd: int, target: int) -> None:
    (sys.stdout if fd == 1 else sys.stderr).flush()
    os.dup2(target, fd)


if __name__ == "__main__":
    sys.exit(run_in_turn(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())))
