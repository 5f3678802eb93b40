"""Deprecated name of :mod:`faithkit.cli.shared_flags` (renamed so that the name says what it declares); it goes in
the next release."""

import warnings

from .shared_flags import *  # noqa: F403

warnings.warn(
    "faithkit.cli.options is now faithkit.cli.shared_flags; the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
