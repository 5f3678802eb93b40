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
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    os.dup2(out.fileno(), 1), os.dup2(err.fileno(), 2)
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's mistakes
        return stop.code
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])


if __name__ == "__main__":
    sys.exit(run_in_turn(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())))
