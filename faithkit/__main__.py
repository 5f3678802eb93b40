"""``python -m faithkit`` (and ``accelerate launch -m faithkit``) runs the command line."""

import sys

from .cli import main

sys.exit(main())
