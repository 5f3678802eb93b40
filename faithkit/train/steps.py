"""One optimizer step and the dev loss: the arithmetic of the loss, whatever the number of processes."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch

from .data import IGNORE


def windows(loader, size: int):
    """Consecutive groups of ``size`` batches (one optimizer step each); an incomplete last group is left out."""
    window = []
    for batch in loader:
        window.append(batch)
        if len(window) == size:
            yield window
            window = []


@dataclass
class TokenLoss:
    """Per-token cross-entropy of a batch, with the labels it was computed against (-100: nothing to learn).

    A causal LM's position t predicts token t+1, and only the batch's response positions need
    logits: where the model takes ``logits_to_keep`` the LM head skips the context before them.
    """

    seq2seq: bool
    logits_to_keep: bool

    @classmethod
    def for_model(cls, model) -> TokenLoss:
        seq2seq = model.config.is_encoder_decoder
        return cls(seq2seq, not seq2seq and "logits_to_keep" in inspect.signature(model.forward).parameters)

    def __call__(self, model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        labels = batch["labels"]
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        if self.seq2seq:
            logits = model(**inputs).logits
        else:
            first = int((labels != IGNORE).int().argmax(1).min())  # the batch's earliest learned token
            keep = labels.shape[1] - first + 1
            if self.logits_to_keep:
                inputs["logits_to_keep"] = keep
            logits, labels = model(**inputs).logits[:, -keep:-1], labels[:, first:]
        losses = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=IGNORE, reduction="none"
        )
        return losses.view(labels.shape), labels


def train_step(
    accelerator, model, optimizer, scheduler, window: list[dict], token_loss: TokenLoss, max_grad_norm: float | None
) -> float:
    """One optimizer step over ``window``; returns its loss, the mean over all its response tokens on all processes.

    Each batch's summed loss is divided by the step's token count across processes and batches
    (times the process and batch counts, which DDP's averaging and ``accelerator.backward``'s
    division by the accumulation steps undo), so the gradient is that of the step's mean loss
    however the rows are spread.
    """
    tokens = sum((batch["labels"] != IGNORE).sum() for batch in window)
    tokens = accelerator.reduce(tokens, "sum").float()
    scale = accelerator.num_processes * accelerator.gradient_accumulation_steps / tokens
    total = torch.zeros((), device=accelerator.device)
    for batch in window:
        with accelerator.accumulate(model):
            losses, _ = token_loss(model, batch)
            loss = losses.sum()
            accelerator.backward(loss * scale)
            if accelerator.sync_gradients and max_grad_norm is not None:
                accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
        total += loss.detach()
    return float(accelerator.reduce(total, "sum") / tokens)


@torch.no_grad()
def dev_loss(accelerator, model, dev_loader, token_loss: TokenLoss) -> float:
    """Mean cross-entropy over every response token of the dev set (each row counted once across processes)."""
    model.eval()
    sums, counts = [], []
    for batch in dev_loader:
        losses, labels = token_loss(model, batch)
        row_sums, row_counts = accelerator.gather_for_metrics((losses.sum(1), (labels != IGNORE).sum(1)))
        sums.append(row_sums)
        counts.append(row_counts)
    model.train()
    return float(torch.cat(sums).sum() / torch.cat(counts).sum())


def parameter_groups(model, weight_decay: float) -> list[dict]:
    """Weight decay on weight matrices only, not on biases and normalisation weights."""
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for parameter in model.parameters():
        (no_decay if parameter.ndim < 2 else decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
