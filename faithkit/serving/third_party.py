"""The libraries' messages a faithkit user cannot act on, filtered here and nowhere else.

faithkit calls transformers, peft and accelerate the way they document; some of their messages are about the
libraries' own internals (one library reading another's deprecated property) or repeat a default faithkit chose,
so no flag of faithkit and no change of the user's would silence them, and printed on every load they hide the
messages that matter. Each entry names the library, when it speaks, and why it is noise. Messages a setting *can*
change are fixed where faithkit makes the call instead (the checker's adapter is saved with
``save_embedding_layers=False``: peft's "Could not find a config file" and hub lookup never happen).
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Unactionable:
    """A message (a regular expression its text starts with) that a user cannot act on, and why."""

    message: str
    source: str
    why: str
    category: type[Warning] = Warning


WARNINGS = (
    Unactionable(
        r"`is_gradient_checkpointing` is deprecated",
        "transformers 5 (modeling_utils), when peft wraps a model",
        "peft's PeftModel reads the deprecated property as it wraps the checker's base model: every faithkit-checker, "
        "Q² and e2e-NLI load (the offline preset's NLI is the checker) and every checker training run",
        FutureWarning,
    ),
)
"""Python warnings hidden while faithkit makes the call that raises them (:func:`hidden_warnings`)."""

LOG_RECORDS = {
    "accelerate.commands.launch": Unactionable(
        r"The following values were not passed to `accelerate launch` and had defaults used instead",
        "accelerate launch, without an `accelerate config` file",
        "it lists the defaults faithkit launch relies on (one process, no mixed precision, no dynamo) as if they "
        "were a mistake",
    ),
}
"""Log records dropped from a library's logger by name (:func:`quiet_loggers`)."""

PROGRESS_BARS = (
    Unactionable(
        r"Loading weights$",
        "transformers 5 (core_model_loading), on every from_pretrained",
        "a bar for reading a checkpoint's tensors from disk, a second on the offline models, drawn before every "
        "metric's own progress line in a score run; downloads keep their bars (huggingface_hub draws those)",
    ),
)
"""transformers' progress bars (by their description) not drawn while faithkit loads a model
(:func:`hidden_progress_bars`)."""


@contextmanager
def hidden_warnings() -> Iterator[None]:
    """Run the enclosed call with the :data:`WARNINGS` ignored, every other warning as the caller's filters say."""
    with warnings.catch_warnings():
        for entry in WARNINGS:
            warnings.filterwarnings("ignore", message=entry.message, category=entry.category)
        yield


@contextmanager
def hidden_progress_bars() -> Iterator[None]:
    """Load a model without drawing the :data:`PROGRESS_BARS` (transformers' other bars are drawn as usual)."""
    from transformers.utils import logging as transformers_logging

    set_hook = getattr(transformers_logging, "set_tqdm_hook", None)
    if set_hook is None:  # a transformers without the hook draws its bars
        yield
        return

    def quiet(factory, args, kwargs):
        if any(re.match(entry.message, str(kwargs.get("desc", ""))) for entry in PROGRESS_BARS):
            return transformers_logging.EmptyTqdm(*args, **kwargs)
        return previous(factory, args, kwargs) if previous else factory(*args, **kwargs)

    previous = set_hook(quiet)
    try:
        yield
    finally:
        set_hook(previous)


class _Drop(logging.Filter):
    def __init__(self, entry: Unactionable):
        super().__init__()
        self.pattern = re.compile(entry.message)

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.match(record.getMessage())


def quiet_loggers() -> None:
    """Drop the :data:`LOG_RECORDS` from their libraries' loggers (once per process; the loggers' other records
    stay)."""
    for name, entry in LOG_RECORDS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(existing, _Drop) for existing in logger.filters):
            logger.addFilter(_Drop(entry))


__all__ = [
    "LOG_RECORDS",
    "PROGRESS_BARS",
    "WARNINGS",
    "Unactionable",
    "hidden_progress_bars",
    "hidden_warnings",
    "quiet_loggers",
]
