"""A run's resumable state, ``OUTPUT/state``, saved and read back without ever unpickling code.

A run folder is something users copy between machines and share, so resuming one must not
execute anything in it. accelerate writes the model as safetensors and the optimizer,
scheduler and random states with ``torch.save``; they are read back with torch's safe
loader (``weights_only=True``: tensors, numbers, strings, lists and dicts only), and a file
that needs more is refused with one line naming it and why. faithkit's own counters
(:class:`RunState`) are JSON, ``run_state.json``, never one of
accelerate's ``custom_checkpoint_*.pkl`` pickles: such a file in a state folder is refused.
"""

from __future__ import annotations

import pickle
import shutil
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

from accelerate import Accelerator

from ..errors import ConfigError, OutputError
from ..data.files import write_json
from ..data.schema import BOOLEAN, NUMBER_OR_NULL, WHOLE, ListOf, Object, read_json_file

RUN_STATE = "run_state.json"


@dataclass
class RunState:
    """The run's own counters, saved and restored with accelerate's state."""

    step: int = 0
    best_value: float | None = None
    best_step: int | None = None
    best_values: dict = field(default_factory=dict)
    bad_evals: int = 0
    stopped: bool = False
    train_loss_first: float | None = None
    train_loss_last: float | None = None
    dev_loss_first: float | None = None
    dev_loss_best: float | None = None
    last_eval_values: dict = field(default_factory=dict)
    evaluations: list = field(default_factory=list)  # {"step", **values} of each evaluation, for the model cards
    SCHEMA: ClassVar[Object] = Object(
        {
            "step": WHOLE,
            "best_value": NUMBER_OR_NULL,
            "best_step": NUMBER_OR_NULL,
            "best_values": Object({}),
            "bad_evals": WHOLE,
            "stopped": BOOLEAN,
            "train_loss_first": NUMBER_OR_NULL,
            "train_loss_last": NUMBER_OR_NULL,
            "dev_loss_first": NUMBER_OR_NULL,
            "dev_loss_best": NUMBER_OR_NULL,
            "last_eval_values": Object({}),
            "evaluations": ListOf(Object({"step": WHOLE})),
        }
    )
    """What a saved state's counters must be (:func:`~faithkit.train.state.load_state` checks them)."""

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict) -> None:
        for key, value in state.items():
            setattr(self, key, value)


def save_state(accelerator: Accelerator, folder: Path, run_state) -> None:
    """accelerate's resumable state and ``run_state.state_dict()`` as JSON, written beside the old state and swapped
    in, so a crash never leaves half a state."""
    staging = folder.with_name(folder.name + ".tmp")
    if accelerator.is_main_process:
        remove(staging)
    accelerator.wait_for_everyone()
    with saving(
        staging,
        f"{folder} is as it was (the state saved before, if any); free space and rerun, with "
        f"--resume if a state was saved",
    ):
        accelerator.save_state(str(staging))
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            write_json(staging / RUN_STATE, run_state.state_dict())
    if accelerator.is_main_process:
        remove(folder)
        staging.rename(folder)
    accelerator.wait_for_everyone()


@contextmanager
def saving(folder: Path, kept: str):
    """A save into ``folder`` that fails (a full disk: torch.save says so as a RuntimeError, safetensors as its own
    error) is one OutputError naming the folder, the free space and ``kept``, what is safe and how to go on."""
    from safetensors import SafetensorError

    try:
        yield
    except (OSError, RuntimeError, SafetensorError) as error:
        if isinstance(error, OutputError):
            raise
        free = shutil.disk_usage(folder.parent).free
        raise OutputError(
            f"cannot write {folder}: {str(error).splitlines()[0][:160]} ({free:,} bytes free on its disk); {kept}"
        ) from None


def load_state(accelerator: Accelerator, folder: Path, run_state) -> None:
    """Restore what :func:`save_state` wrote, loading no pickled code (see the module docstring)."""
    pickles = sorted(path.name for path in folder.glob("custom_checkpoint_*.pkl"))
    if pickles:
        raise ConfigError(
            f"{folder / pickles[0]} is a pickle, which can run code when it is read, and faithkit "
            f"does not read it (its own state is {RUN_STATE}); delete it to resume, if the folder is "
            f"yours, or start the run again"
        )
    counters = folder / RUN_STATE
    if not counters.is_file():
        raise ConfigError(
            f"{counters} is missing, so {folder} cannot be resumed (a state saved by an older "
            f"faithkit, or damaged); start the run again"
        )
    known = run_state.state_dict()
    values = read_json_file(counters, run_state.SCHEMA, "start the run again", error=ConfigError)
    if set(values) - set(known):
        raise ConfigError(
            f"{counters}: expected an object with the keys {sorted(known)}, got {str(values)[:80]}; start the run again"
        )
    with _safe_loads() as refused:
        accelerator.load_state(str(folder))
    if refused:  # accelerate skips random states it cannot read: a refusal there must stop the run too
        raise refused[0]
    run_state.load_state_dict(values)


@contextmanager
def _safe_loads():
    """accelerate's loads inside the block use torch's safe loader, whatever they ask for; a file it refuses is a
    ConfigError (raised, and kept in the yielded list)."""
    import accelerate.checkpointing as checkpointing

    original, refused = checkpointing.load, []

    def load(file, map_location=None, **kwargs):
        kwargs["weights_only"] = True
        try:
            with warnings.catch_warnings():  # torch's and accelerate's notes on weights_only: faithkit asks for it
                warnings.simplefilter("ignore")
                return original(file, map_location=map_location, **kwargs)
        except pickle.UnpicklingError as error:
            refused.append(
                ConfigError(
                    f"{file} holds objects other than tensors and plain values, which could run code when read, so "
                    f"faithkit does not load it (torch's safe loader: {_refusal_reason(error)}); resume only a run "
                    f"folder you trust and made with faithkit, or start the run again"
                )
            )
            raise refused[-1] from None

    checkpointing.load = load
    try:
        yield refused
    finally:
        checkpointing.load = original


def _refusal_reason(error: pickle.UnpicklingError) -> str:
    """The line of torch's refusal that names what it would not load (``Trying to load unsupported GLOBAL
    posix.system …``), whole; else its first line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    named = [line for line in lines if "GLOBAL" in line or "Unsupported" in line or "unsupported" in line]
    return (named or lines or ["no reason given"])[0].rstrip(".")


def remove(path: Path) -> None:
    """Delete a folder, or a link or file in its place (the link only: never what it points at)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
