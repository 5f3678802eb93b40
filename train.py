"""Fine-tune a dialogue model: ``accelerate launch train.py --config configs/train/NAME.yaml [--output-dir DIR] [overrides]``.

Thin: the same as ``faithkit train``; the loop lives in :mod:`faithkit.train`.
"""

import argparse
import sys

from faithkit.cli import configure_logging
from faithkit.cli.train import DESCRIPTION, add_arguments, run
from faithkit.errors import FaithkitError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging()
    try:
        return run(args)
    except FaithkitError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
