"""Fine-tune a dialogue model: ``accelerate launch train.py --config configs/train/NAME.yaml [--output-dir DIR] [overrides]``.

The same as ``faithkit train …`` (``faithkit train --help`` lists every flag); the loop lives in
:mod:`faithkit.train`.
"""

import sys

from faithkit.cli import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
