"""Deprecated name of :mod:`faithkit.metrics.metric_options` (renamed so that the name says what it declares); it
goes in the next release."""

import warnings

from .metric_options import *  # noqa: F403
from .metric_options import __all__  # noqa: F401

warnings.warn(
    "faithkit.metrics.options is now faithkit.metrics.metric_options; the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
