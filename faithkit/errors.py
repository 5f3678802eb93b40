"""The one kind of error a user can fix: the command line prints ``error: <message>`` and exits 2.

Every message names the thing that is wrong (file, column, option, model, config key) and
the fix. Anything else that escapes is a bug in faithkit and keeps its traceback.
"""


class FaithkitError(Exception):
    """A user mistake: bad input, option, config or an unavailable model."""


class InputError(FaithkitError, ValueError):
    """An input file cannot be read as rows (as opposed to one bad row, which becomes an error record)."""


class ConfigError(FaithkitError, ValueError):
    """A setting is out of range, unknown or inconsistent with another."""


class ModelNotAvailableError(FaithkitError, RuntimeError):
    """The model can be neither found locally nor downloaded."""


class OutputError(FaithkitError, OSError):
    """An output cannot be written, is held by another run, or holds another job's results."""


class PrecisionError(FaithkitError, ValueError):
    """The model's logits are NaN or infinite: its precision overflowed (float16 does for some models)."""


class ServerError(FaithkitError, RuntimeError):
    """A serving engine cannot be reached, refuses the request or does not answer as OpenAI's API does."""
