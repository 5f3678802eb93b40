"""The training loop: accelerate does placement, precision, accumulation, processes and saved state.

Shaped after transformers' ``run_summarization_no_trainer.py``. What faithkit adds:

* **One run whatever the number of processes.** Batches are split among processes
  (``split_batches``), so ``batch_size`` is the number of rows per forward pass summed over
  processes, and the loss of an optimizer step is the mean over every response token of its
  ``gradient_accumulation_steps`` batches on all processes. The same config thus gives the
  same loss curve on one process or several (tested within float tolerance).
* **Exact resumption.** The resumable state (model, optimizer, scheduler, RNG, and the run's
  own counters as JSON; read back without unpickling code, see :mod:`.state`) goes to ``OUTPUT/state`` at every
  evaluation (or every ``save_steps``). The data order of epoch ``e`` is a function of the seed
  and ``e`` alone (accelerate's seedable sampler; the loader has its own generator so that
  iterating it never touches the global RNG that dropout uses), and ``--resume`` skips the
  batches already seen with ``skip_first_batches``; a resumed run ends with the same
  parameters as an uninterrupted one.
* An epoch is ``rows // (batch_size × gradient_accumulation_steps)`` optimizer steps of full
  batches; the few rows left over differ from epoch to epoch, as the order is reshuffled.

Output folder: ``best/`` and ``last/`` (``save_pretrained`` folders with the tokenizer, a
``trainer_info.json`` and a model card, :mod:`.checkpoint`), ``state/`` (:mod:`.state`), ``metrics.csv``,
``generations.jsonl`` and ``run_config.yaml`` (:mod:`.run_folder`), and ``tensorboard/faithkit/`` (every value of
metrics.csv, as ``evaluation.log_with``'s other trackers get them). The arithmetic of a step's loss is
:mod:`.steps`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.logging import get_logger
from accelerate.utils import (
    DataLoaderConfiguration,
    GradientAccumulationPlugin,
    ProjectConfiguration,
    broadcast_object_list,
    set_seed,
)
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import get_scheduler

from ..decoding import default_template, pad_token_id
from ..errors import ConfigError
from .checkpoint import save_checkpoint
from .config import TrainConfig
from .data import Collator, encode_rows, load_rows
from .hooks import build_hook, load_hook_metrics
from .memory import map_large_allocations, release_memory
from .model import build_model
from .run_folder import RunLog, claim_output_dir, run_name, run_record
from .state import RunState, load_state, save_state
from .steps import TokenLoss, dev_loss, parameter_groups, train_step, windows

__all__ = ["TrainingRun", "enable_activation_checkpointing", "make_accelerator", "train"]

logger = get_logger(__name__)

TRACKER_PROJECT = "faithkit"  # wandb's project, mlflow's experiment, the folder under OUTPUT/tensorboard


def train(config: TrainConfig, output_dir: str | Path, resume: bool = False) -> dict:
    """Run (or with ``resume``, continue) training; return the summary that train.py prints as JSON."""
    return TrainingRun(config, Path(output_dir), resume).run()


class TrainingRun:
    """One run of :func:`train`. Built ready to train: the output folder claimed, the model, data, optimizer and
    trackers prepared, the state restored with ``resume``. :meth:`run` then takes optimizer steps
    (:meth:`step`), evaluating (:meth:`evaluate`) and saving the resumable state when they are due."""

    def __init__(self, config: TrainConfig, output_dir: Path, resume: bool):
        self.config, self.output_dir = config, output_dir
        t = config.training
        self.accelerator = make_accelerator(config, output_dir)
        train_rows, dev_rows = load_rows(config.data, "train"), load_rows(config.data, "dev")
        self._claim_output_dir(train_rows, dev_rows, resume)
        set_seed(t.seed)
        if t.map_large_allocations:
            map_large_allocations()
        self.model, self.tokenizer = build_model(config.model, t.seed)
        if t.activation_checkpointing:
            enable_activation_checkpointing(self.model)
        encoded = self._encode_splits(train_rows, dev_rows)
        # only the main process decodes and scores; the metrics' judge models load for each evaluation and are
        # freed after it, so that they never sit beside a training step's gradients, optimizer state and activations
        self.hook = (
            build_hook(
                config.evaluation,
                dev_rows,
                lambda: load_hook_metrics(config.evaluation),
                self.model,
                self.tokenizer,
                config.data.max_length,
            )
            if self.accelerator.is_main_process
            else None
        )
        self._schedule(len(encoded["train"]))
        self.token_loss = TokenLoss.for_model(self.model)
        self._prepare_training(encoded)
        self.state = RunState()
        if resume:
            load_state(self.accelerator, output_dir / "state", self.state)
            logger.info("resumed at step %d of %d", self.state.step, self.total_steps)
        self.log = RunLog(output_dir, self.accelerator, keep_until=self.state.step if resume else -1)
        self._start_trackers()
        self.progress: tqdm | None = None

    def _claim_output_dir(self, train_rows: list, dev_rows: list, resume: bool) -> None:
        """Check that the output folder is this run's (or free), then record the config and rows in it."""
        claim_output_dir(self.output_dir, run_record(self.config, train_rows, dev_rows), resume, self.accelerator)

    def _encode_splits(self, train_rows: list, dev_rows: list) -> dict:
        """Both splits' token ids, in the prompt layout decoding picks for the model."""
        template = default_template(self.model, self.tokenizer)
        seq2seq = self.model.config.is_encoder_decoder
        with self.accelerator.main_process_first():  # the main process tokenizes into the cache, the others read it
            return {
                split: _encode(split, rows, self.tokenizer, template, seq2seq, self.config.data)
                for split, rows in (("train", train_rows), ("dev", dev_rows))
            }

    def _schedule(self, train_examples: int) -> None:
        """Steps per epoch, in all, and between evaluations and saves; no full step is a ConfigError."""
        t, e = self.config.training, self.config.evaluation
        self.rows_per_step = t.batch_size * t.gradient_accumulation_steps
        self.steps_per_epoch = train_examples // self.rows_per_step
        if not self.steps_per_epoch:
            raise ConfigError(
                f"{train_examples} training rows make no full optimizer step of "
                f"batch_size x gradient_accumulation_steps = {self.rows_per_step} rows; lower them"
            )
        self.total_steps = t.max_steps or t.num_epochs * self.steps_per_epoch
        self.eval_every = e.eval_steps or self.steps_per_epoch
        self.save_every = t.save_steps or self.eval_every

    def _prepare_training(self, encoded: dict) -> None:
        """The loaders, optimizer and scheduler, placed by accelerate with the model."""
        t, e = self.config.training, self.config.evaluation
        seq2seq = self.model.config.is_encoder_decoder
        collator = Collator(pad_token_id(self.tokenizer), self.model.config.decoder_start_token_id if seq2seq else None)
        train_loader = DataLoader(
            encoded["train"],
            batch_size=t.batch_size,
            shuffle=True,
            drop_last=True,
            collate_fn=collator,
            generator=torch.Generator().manual_seed(t.seed),
        )
        dev_loader = DataLoader(encoded["dev"], batch_size=e.eval_batch_size, collate_fn=collator)
        optimizer = torch.optim.AdamW(parameter_groups(self.model, t.weight_decay), lr=t.learning_rate)
        scheduler = get_scheduler(
            "linear",
            optimizer,
            num_warmup_steps=math.ceil(t.warmup_ratio * self.total_steps),
            num_training_steps=self.total_steps,
        )
        self.model, self.optimizer, self.train_loader, self.dev_loader, self.scheduler = self.accelerator.prepare(
            self.model, optimizer, train_loader, dev_loader, scheduler
        )

    def _start_trackers(self) -> None:
        name = run_name(self.config, self.output_dir)
        self.accelerator.init_trackers(
            TRACKER_PROJECT,
            config=_flat_config(self.config),
            init_kwargs={"wandb": {"name": name}, "mlflow": {"run_name": name}},
        )
        logger.info(
            "training %d steps (%d per epoch) of %d rows each, on %d process(es); evaluating every %d steps",
            self.total_steps,
            self.steps_per_epoch,
            self.rows_per_step,
            self.accelerator.num_processes,
            self.eval_every,
        )

    @property
    def finished(self) -> bool:
        return self.state.step >= self.total_steps or self.state.stopped

    def run(self) -> dict:
        """Train to the last step (or an early stop), save ``last/``, and return the summary."""
        state = self.state
        if self.config.evaluation.eval_at_start and state.step == 0:
            self.evaluate()
        self.progress = tqdm(
            total=self.total_steps, initial=state.step, disable=not self.accelerator.is_main_process, desc="training"
        )
        self.model.train()
        while not self.finished:
            for window in self._remaining_windows():
                self.step(window)
                if self.finished:
                    break
        self.progress.close()
        if state.stopped:
            logger.info(
                "early stop at step %d: %s did not improve for %d evaluations",
                state.step,
                self.config.evaluation.best_metric,
                self.config.training.patience,
            )
        self._save_checkpoint("last", state.last_eval_values)
        self.accelerator.end_training()
        return {
            "checkpoint": str(self.output_dir / "best"),
            "last_checkpoint": str(self.output_dir / "last"),
            "steps": state.step,
            "train_loss_first": state.train_loss_first,
            "train_loss_last": state.train_loss_last,
            "dev_loss_first": state.dev_loss_first,
            "dev_loss_best": state.dev_loss_best,
            "dev_metrics": state.best_values,
        }

    def _remaining_windows(self):
        """The optimizer steps' batches left in the current epoch (the epoch's order, the batches seen skipped)."""
        accumulation = self.config.training.gradient_accumulation_steps
        self.train_loader.set_epoch(self.state.step // self.steps_per_epoch)
        seen = (self.state.step % self.steps_per_epoch) * accumulation
        loader = self.accelerator.skip_first_batches(self.train_loader, seen) if seen else self.train_loader
        return windows(loader, accumulation)

    def step(self, window: list) -> float:
        """One optimizer step on ``window`` (its accumulated batches), logged; then an evaluation and a save of the
        resumable state when they are due. Returns the step's loss."""
        state = self.state
        learning_rate = self.scheduler.get_last_lr()[0]  # the rate this step uses
        loss = train_step(
            self.accelerator,
            self.model,
            self.optimizer,
            self.scheduler,
            window,
            self.token_loss,
            self.config.training.max_grad_norm,
        )
        state.step += 1
        state.train_loss_first = loss if state.train_loss_first is None else state.train_loss_first
        state.train_loss_last = loss
        self.log.values(
            state.step, {"train_loss": loss, "learning_rate": learning_rate, "epoch": state.step / self.steps_per_epoch}
        )
        if self.progress is not None:
            self.progress.update(1)
            self.progress.set_postfix(loss=f"{loss:.4f}")
        last = state.step == self.total_steps
        if state.step % self.eval_every == 0 or last:
            self.evaluate()
        if state.step % self.save_every == 0 or last or state.stopped:
            self._save_state()
        return loss

    def evaluate(self) -> None:
        """Dev loss and, on the main process, the hook's decoded responses and scores; logged, the best kept in
        ``best/``, the same decisions (best, early stop) on every process."""
        accelerator, state = self.accelerator, self.state
        release_memory()  # what the training steps freed, before evaluation allocates its own
        values = {"dev_loss": dev_loss(accelerator, self.model, self.dev_loader, self.token_loss)}
        if self.hook is not None:
            unwrapped = accelerator.unwrap_model(self.model).eval()
            with accelerator.autocast():
                scalars, responses = self.hook(unwrapped, self.tokenizer)
            unwrapped.train()
            release_memory()  # the judges, before training goes on
            values.update(scalars)
            self.log.generations(state.step, self.hook.rows, responses)
        values = broadcast_object_list([values])[0]  # every process takes the same best/stop decisions
        self.log.values(state.step, values)
        state.evaluations.append({"step": state.step, **values})
        _update_best(self.config, state, values)
        if state.best_step == state.step:
            self._save_checkpoint("best", values)
        state.last_eval_values = values
        logger.info("step %d: %s", state.step, ", ".join(f"{k} {v:.4f}" for k, v in values.items()))

    def _save_state(self) -> None:
        """The resumable state (model, optimizer, scheduler, RNG and counters) in ``state/``."""
        save_state(self.accelerator, self.output_dir / "state", self.state)

    def _save_checkpoint(self, folder: str, values: dict) -> None:
        """The model and tokenizer as a ``save_pretrained`` folder (``best``, ``last``) with its model card."""
        save_checkpoint(
            self.accelerator, self.model, self.tokenizer, self.output_dir / folder, self.state, values, self.config
        )


def make_accelerator(config: TrainConfig, output_dir: Path) -> Accelerator:
    """accelerate set up for this run: accumulation, precision, trackers, and batches split among processes."""
    t, e = config.training, config.evaluation
    unavailable = [name for name in e.log_with if not _tracker_available(name)]
    if unavailable:
        raise ConfigError(
            f"evaluation.log_with names {', '.join(unavailable)}, which accelerate cannot log to here "
            f"(not installed, or not one of its trackers: {', '.join(_trackers())}); pip install it, "
            f"or drop it from --log-with (empty: the CSV log only)"
        )
    accelerator = Accelerator(
        # several processes without a GPU: accelerate joins them over gloo only when told they run on CPU
        cpu=int(os.environ.get("WORLD_SIZE", "1")) > 1 and not torch.cuda.is_available(),
        gradient_accumulation_plugin=GradientAccumulationPlugin(
            num_steps=t.gradient_accumulation_steps, sync_with_dataloader=False
        ),
        mixed_precision=t.mixed_precision,
        log_with=e.log_with or None,
        project_config=ProjectConfiguration(project_dir=str(output_dir), logging_dir=str(output_dir / "tensorboard")),
        dataloader_config=DataLoaderConfiguration(split_batches=True, use_seedable_sampler=True, data_seed=t.seed),
    )
    for key, size in (("training.batch_size", t.batch_size), ("evaluation.eval_batch_size", e.eval_batch_size)):
        if size % accelerator.num_processes:
            raise ConfigError(
                f"{key} ({size}) must be a multiple of the number of processes "
                f"({accelerator.num_processes}): batches are split among them"
            )
    return accelerator


def enable_activation_checkpointing(model) -> None:
    """Keep only each layer's input through the forward pass and recompute the rest in the backward pass."""
    if not getattr(model, "supports_gradient_checkpointing", False):
        raise ConfigError(
            f"training.activation_checkpointing: {type(model).__name__} does not support it; set it to false"
        )
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})


def _trackers() -> list[str]:
    from accelerate.tracking import LOGGER_TYPE_TO_CLASS

    return sorted(LOGGER_TYPE_TO_CLASS)


def _tracker_available(name: str) -> bool:
    """Whether accelerate has the tracker ``name`` and its library is installed."""
    from accelerate.utils import imports

    return name in _trackers() and getattr(imports, f"is_{name}_available")()


def _encode(split: str, rows, tokenizer, template, seq2seq: bool, data):
    """Token ids of one split, with what fitting them into ``data.max_length`` cost in the log."""
    examples, stats = encode_rows(
        rows, tokenizer, template, seq2seq, data.max_length, data.max_response_length, num_proc=data.num_proc
    )
    logger.info(
        "%s: %d rows; %d contexts cut to fit %d tokens, %d responses cut to %d tokens",
        split,
        stats.rows,
        stats.contexts_cut,
        data.max_length,
        stats.responses_cut,
        data.max_response_length,
    )
    if stats.dropped:
        logger.warning(
            "%s: %d of %d rows left out: their history alone does not fit in data.max_length %d beside the response",
            split,
            stats.dropped,
            stats.rows,
            data.max_length,
        )
    if not examples:
        raise ConfigError(f"no {split} row fits in data.max_length {data.max_length}; raise it")
    return examples


def _flat_config(config: TrainConfig) -> dict:
    """The config as TensorBoard hyperparameters: scalars only."""
    flat = {}
    for section, values in config.to_dict().items():
        for key, value in values.items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value)
            flat[f"{section}.{key}"] = "none" if value is None else value
    return flat


def _update_best(config: TrainConfig, state: RunState, values: dict) -> None:
    metric = config.evaluation.best_metric
    if metric not in values:
        raise ConfigError(
            f"evaluation.best_metric '{metric}' is not among the evaluation's values "
            f"({', '.join(sorted(values))}); pick one of them"
        )
    if state.dev_loss_first is None:
        state.dev_loss_first = values["dev_loss"]
    state.dev_loss_best = min(values["dev_loss"], math.inf if state.dev_loss_best is None else state.dev_loss_best)
    value = values[metric]
    lower = config.best_is_lower()
    if state.best_value is None or (value < state.best_value if lower else value > state.best_value):
        state.best_value, state.best_step, state.best_values, state.bad_evals = value, state.step, dict(values), 0
        return
    state.bad_evals += 1
    patience = config.training.patience
    state.stopped = patience is not None and state.bad_evals >= patience
