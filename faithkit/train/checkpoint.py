"""Checkpoints: ``best/`` and ``last/``, ``save_pretrained`` folders that load anywhere, written whole or not at all."""

from __future__ import annotations

from pathlib import Path

from accelerate import Accelerator

from ..data.files import write_json
from .card import write_model_card
from .config import TrainConfig
from .run_folder import run_name
from .state import RunState, remove, saving


def save_checkpoint(
    accelerator: Accelerator, model, tokenizer, folder: Path, state: RunState, values: dict, config: TrainConfig
) -> None:
    """A ``save_pretrained`` folder (model + tokenizer) that ``faithkit.serving.models.load`` and ``faithkit generate`` read,
    with its model card (README.md) and ``trainer_info.json`` (its step and dev values)."""
    state_dict = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        staging = folder.with_name(folder.name + ".tmp")
        remove(staging)
        with saving(staging, f"{folder} is as it was; free space and rerun, with --resume if a state was saved"):
            accelerator.unwrap_model(model).save_pretrained(
                staging, state_dict=state_dict, save_function=accelerator.save
            )
            tokenizer.save_pretrained(staging)
            write_json(staging / "trainer_info.json", {"step": state.step, **values}, indent=1)
            write_model_card(
                staging,
                config,
                f"{run_name(config, folder.parent)}-{folder.name}",
                state.step,
                values,
                state.evaluations,
            )
        remove(folder)
        staging.rename(folder)
    accelerator.wait_for_everyone()
