"""Fine-tune the claim checker: a LoRA adapter on a causal LM, trained on :mod:`.synthetic` examples with accelerate.

The loss is cross-entropy over the three label words' logits at the prompt's end (the same prompt and
logits :class:`faithkit.metrics.faithkit_checker.CheckerModel` scores with). LoRA sits on every linear layer of the
top ``layers`` transformer blocks only: the frozen blocks below need no backward pass, which is most of the
saving on a CPU. Batches are length-sorted buckets in a seeded order; with one thread and the same seed and
data, a rerun writes the same adapter bytes. Two settings trade time for memory without changing the update:
``micro_batch_size`` (gradient accumulation over micro-batches of a step's batch) and ``gradient_checkpointing``
(activations recomputed in the backward pass).

The run folder holds ``checkpoint/`` (adapter, optimizer, step: written every ``save_every`` steps, so a
stopped run resumes where it was), ``log.jsonl`` (loss per logged step) and, at the end, ``adapter/`` (what
``faithkit-checker`` loads) with ``metrics.json`` (held-out accuracy and AUROC).
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ConfigError, InputError
from ..data.files import open_append, refuse_link, replacing_folder, write_json, write_text
from ..metrics import faithkit_checker as checker
from ..settings.options import check, option
from ..data.paths import PathArg
from ..data.schema import Object, read_json_file
from .examples import Example, read


@dataclass(frozen=True)
class CheckerTraining:
    """The training recipe: base model, data, LoRA shape and optimiser settings, each checked when made (before the
    data are read or a model loads).

    Args:
        model (`str`, defaults to "smollm2-135m"): the base causal LM (an offline name, a hub id or a folder).
        data (`str`, defaults to "runs/checker-data"): the folder of ``train.jsonl`` and ``test.jsonl``.
        output (`str`, defaults to "runs/checker"): the run folder.
        seed (`int`, defaults to 0): seed of the batch order and of the LoRA initialisation.
        layers (`int`, defaults to 12): LoRA on every linear layer of this many top blocks.
        lora_rank (`int`, defaults to 16): the LoRA rank.
        lora_alpha (`int`, defaults to 32): the LoRA alpha.
        learning_rate (`float`, defaults to 3e-4): the peak learning rate.
        epochs (`float`, defaults to 1.0): passes over the training examples (a fraction stops early).
        batch_size (`int`, defaults to 8): examples per step.
        micro_batch_size (`int`, *optional*): examples per forward and backward pass (unset: the whole batch).
        gradient_checkpointing (`bool`, defaults to False): recompute activations in the backward pass.
        max_examples (`int`, *optional*): train on the first N examples only.
        mixed_precision (`str`, defaults to "bf16"): ``bf16`` autocast or ``no``.
        save_every (`int`, defaults to 25): steps between checkpoints.
        log_every (`int`, defaults to 5): steps between lines of ``log.jsonl``.

    Examples:

    ```python
    >>> from faithkit.checker.training import CheckerTraining
    >>> CheckerTraining(epochs=0.5).model
    'smollm2-135m'
    >>> CheckerTraining(layers=0)
    Traceback (most recent call last):
      ...
    faithkit.settings.options.OptionError: layers must be at least 1, got 0
    ```
    """

    model: str = option(
        "smollm2-135m", "base causal LM (an offline name, a hub id or a folder)", flag_type=PathArg("model")
    )
    data: str = option(
        "runs/checker-data",
        "folder holding train.jsonl and test.jsonl (faithkit checker data)",
        flag_type=PathArg("input folder"),
    )
    output: str = option(
        "runs/checker", "run folder: checkpoint/, log.jsonl, adapter/, metrics.json", flag_type=PathArg("output folder")
    )
    seed: int = option(0, "seed of the batch order and of the LoRA initialisation")
    layers: int = option(12, "LoRA on every linear layer of this many top blocks (the rest is frozen)", low=1)
    lora_rank: int = option(16, "LoRA rank", low=1)
    lora_alpha: int = option(32, "LoRA alpha (the update is scaled by lora_alpha / lora_rank)", low=1)
    learning_rate: float = option(
        3e-4, "peak learning rate (20 warm-up steps, then linear decay to 0)", low=0, low_open=True
    )
    epochs: float = option(1.0, "passes over the training examples (a fraction stops early)", low=0, low_open=True)
    batch_size: int = option(8, "examples per step (length-sorted buckets)", low=1)
    micro_batch_size: int | None = option(
        None,
        "examples per forward and backward pass: a step's batch goes through in micro-batches of this many, whose "
        "gradients add up to the whole batch's (the same update in less memory); unset: the whole batch at once",
        low=1,
    )
    gradient_checkpointing: bool = option(
        False,
        "keep only each block's input in the forward pass and recompute the rest in the backward pass (less memory, "
        "more time)",
    )
    max_examples: int | None = option(None, "train on the first N examples only (smoke runs)", low=1)
    mixed_precision: str = option(
        "bf16", "bf16 autocast (about 1.7x faster on a CPU with AVX512-BF16) or no", choices=("bf16", "no")
    )
    save_every: int = option(25, "steps between checkpoints (a stopped run resumes from the last)", low=1)
    log_every: int = option(5, "steps between lines of log.jsonl", low=1)

    def __post_init__(self):
        check(self)


def batches(examples: list[Example], batch_size: int, seed: int, epochs: float) -> list[list[Example]]:
    """Length-sorted buckets of ``batch_size`` examples, shuffled by ``seed``; ``epochs`` (may be fractional)
    passes, each shuffled again: batches of similar length pad little, and a seed gives the same plan.

    Args:
        examples (`list[Example]`): the training examples.
        batch_size (`int`): examples per step.
        seed (`int`): the shuffle's seed.
        epochs (`float`): passes over the examples.

    Examples:

    ```python
    >>> from faithkit.checker.examples import Example
    >>> examples = [Example(f"e{i}", "Emperor penguins live only in Antarctica.", [], "x" * i, "supported",
    ...                     "extractive", "demo") for i in range(1, 6)]  # responses of 1 to 5 characters
    >>> from faithkit.checker.training import batches
    >>> [[example.id for example in batch] for batch in batches(examples, 2, seed=0, epochs=1.5)]
    [['e1', 'e2'], ['e5'], ['e3', 'e4'], ['e5'], ['e3', 'e4']]
    ```
    """
    plan: list[list[Example]] = []
    rng = random.Random(seed)
    for epoch in range(math.ceil(epochs)):
        order = sorted(examples, key=lambda e: (len(e.document) + len(e.response) + sum(map(len, e.history)), e.id))
        buckets = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        rng.shuffle(buckets)
        if epoch + 1 > epochs:
            buckets = buckets[: round(len(buckets) * (epochs - epoch))]
        plan += buckets
    return plan


def micro_batches(group: list[Example], size: int | None) -> list[list[Example]]:
    """A step's batch cut into consecutive micro-batches of ``size`` (the batch is length-sorted, so each pads
    little); the whole batch when ``size`` is unset. Each one's mean loss counts by its share of the batch, so the
    gradients add up to the whole batch's mean loss's.

    Args:
        group (`list[Example]`): a step's batch.
        size (`int`, *optional*): examples per micro-batch.

    Examples:

    ```python
    >>> from faithkit.checker.examples import Example
    >>> examples = [Example(f"e{i}", "Emperor penguins live only in Antarctica.", [], "x" * i, "supported",
    ...                     "extractive", "demo") for i in range(1, 6)]  # responses of 1 to 5 characters
    >>> from faithkit.checker.training import micro_batches
    >>> [[example.id for example in part] for part in micro_batches(examples[:3], 2)]
    [['e1', 'e2'], ['e3']]
    ```
    """
    size = size or len(group)
    return [group[start : start + size] for start in range(0, len(group), size)]


def lora_model(config: CheckerTraining):
    """The base LM (float32, train mode) with LoRA on every linear layer of its top ``layers`` blocks."""
    from peft import LoraConfig, get_peft_model

    from ..serving import models
    from ..serving.third_party import hidden_warnings

    model, tokenizer = models.load(config.model, kind="causal", for_training=True, dtype="float32")
    blocks = model.config.num_hidden_layers
    if config.layers > blocks:
        raise ConfigError(f"layers: {config.model} has {blocks} blocks, fewer than {config.layers}")
    lora = LoraConfig(
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        layers_to_transform=list(range(blocks - config.layers, blocks)),
    )
    model.config.use_cache = False
    with hidden_warnings():
        peft_model = get_peft_model(model, lora)
    if config.gradient_checkpointing:  # after peft, which would add a hook that makes the embeddings require a gradient
        model.activation_checkpointing_enable({"use_reentrant": False})
        model.disable_input_require_grads()  # non-reentrant checkpoints need none: no backward through frozen blocks
    peft_model.peft_config["default"].base_model_name_or_path = config.model  # the offline name, not a cache path
    return peft_model, tokenizer


def inputs(tokenizer, group: list[Example]):
    texts = [checker.prompt(e.document, e.history, e.response) for e in group]
    return checker.encode(tokenizer, texts)


def train(config: CheckerTraining) -> dict:
    """Run (or resume) the recipe; return the held-out figures also written to ``metrics.json``."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    examples, test, plan = _data(config)
    set_seed(config.seed)
    output = Path(config.output)
    output.mkdir(parents=True, exist_ok=True)
    _own_run_folder(output, config)
    refuse_link(output / "log.jsonl", "--output")  # before the model loads: it is opened to append once it has
    model, tokenizer = lora_model(config)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    tokenizer.padding_side = "right"
    label_ids = checker.label_token_ids(tokenizer)
    targets = {label: index for index, label in enumerate(checker.LABELS)}
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * max(0.0, 1 - step / len(plan))
    )
    accelerator = Accelerator(cpu=True, mixed_precision=config.mixed_precision)
    model, optimizer = accelerator.prepare(model, optimizer)
    start, started = _resume(output / "checkpoint", model, optimizer, schedule), time.time()
    model.train()
    with open_append(output / "log.jsonl") as log:
        for step in range(start, len(plan)):
            group, loss = plan[step], 0.0
            for part in micro_batches(group, config.micro_batch_size):
                with accelerator.autocast():
                    logits = checker.label_logits(model, inputs(tokenizer, part), label_ids)
                labels = torch.tensor([targets[e.label] for e in part])
                share = torch.nn.functional.cross_entropy(logits.float(), labels) * (len(part) / len(group))
                accelerator.backward(share)
                loss += share.item()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            if (step + 1) % config.log_every == 0:
                _log_step(log, step + 1, len(plan), loss, started)
            if (step + 1) % config.save_every == 0 and step + 1 < len(plan):
                _checkpoint(output / "checkpoint", model, optimizer, schedule, step + 1)
    with replacing_folder(output / "adapter") as adapter:
        save_adapter(accelerator.unwrap_model(model), tokenizer, adapter)
    figures = evaluate(accelerator.unwrap_model(model), tokenizer, test)
    figures.update(train_examples=len(examples), steps=len(plan), train_seconds=round(time.time() - started, 1))
    write_json(output / "metrics.json", figures)
    return figures


def save_adapter(model, tokenizer, folder: Path) -> None:
    """The trained adapter and its tokenizer as ``folder``, the same bytes from any process (:func:`_sort_target_modules`).

    LoRA on linear layers leaves the embeddings as they were; saying so (``save_embedding_layers=False``) spares peft
    its check, which looks the base model's config up on the hub and warns twice when the hub is unreachable."""
    model.save_pretrained(folder, save_embedding_layers=False)
    _sort_target_modules(folder / "adapter_config.json")
    tokenizer.save_pretrained(folder)


def _sort_target_modules(path: Path) -> None:
    """Rewrite peft's adapter config with ``target_modules`` sorted: peft keeps them as a set and writes them in
    the set's order, which changes with Python's hash seed from run to run, so the same recipe wrote other bytes."""
    saved = json.loads(path.read_text())
    saved["target_modules"] = sorted(saved["target_modules"])
    write_text(path, json.dumps(saved, indent=2, sort_keys=True))


def _log_step(log, step: int, steps: int, loss: float, started: float) -> None:
    """One line of ``log.jsonl``: the step, of how many, its loss and the seconds since training started."""
    record = {"step": step, "of": steps, "loss": round(loss, 4), "seconds": round(time.time() - started, 1)}
    log.write(json.dumps(record) + "\n")
    log.flush()


def _own_run_folder(output: Path, config: CheckerTraining) -> None:
    """Write the recipe into the run folder, or refuse one whose checkpoint another recipe wrote (a resume must
    continue the same run, not mix two)."""
    recorded, settings = output / "config.json", asdict(config)
    if (output / "checkpoint").exists() and recorded.exists():
        fix = "give another --output, or delete the folder to start the run again"
        earlier = read_json_file(recorded, Object({}), fix, error=ConfigError)
        changed = sorted(key for key in {**earlier, **settings} if earlier.get(key) != settings.get(key))
        if changed:
            raise ConfigError(
                f"{output} holds a checkpoint of a run with other settings ({', '.join(changed)}); give another "
                "--output, or the same settings to resume it"
            )
    write_json(recorded, settings)


def _data(config: CheckerTraining) -> tuple[list[Example], list[Example], list[list[Example]]]:
    """The training examples, the held-out ones and the batches, each checked before any model loads."""
    examples = _examples(Path(config.data) / "train.jsonl")[: config.max_examples]
    return examples, _test_examples(Path(config.data) / "test.jsonl"), _plan(examples, config)


def _plan(examples: list[Example], config: CheckerTraining) -> list[list[Example]]:
    """The batches of the run; settings that make none are a ConfigError before any model loads."""
    plan = batches(examples, config.batch_size, config.seed, config.epochs)
    if not plan:
        raise ConfigError(
            f"training: {len(examples)} examples in batches of {config.batch_size} for {config.epochs:g} epochs make "
            "no training step; raise epochs or max_examples, or lower batch_size"
        )
    return plan


def _test_examples(path: Path) -> list[Example]:
    """The held-out examples; an InputError when they are all supported or none is, as the held-out AUROC of
    supported against the rest needs both, before any training."""
    examples = _examples(path)
    supported = sum(example.label == "supported" for example in examples)
    if supported in (0, len(examples)):
        raise InputError(
            f"{path}: {'every' if supported else 'no'} test example is supported, and the held-out AUROC (supported "
            "against the rest) needs both; make the data again with a larger size or test_share"
        )
    return examples


def _examples(path: Path) -> list[Example]:
    """The examples of ``path``; a missing or empty file is an InputError naming it and how to make it."""
    if not path.is_file():
        raise InputError(f"{path} not found; make the data with 'faithkit checker data' (or give --data)")
    examples = read(path)
    if not examples:
        raise InputError(f"{path} holds no examples; make the data with 'faithkit checker data'")
    return examples


def evaluate(model, tokenizer, examples: list[Example]) -> dict:
    """Held-out accuracy (argmax of the three labels) and the AUROC of P(supported) for supported vs the rest."""
    from ..stats import auroc

    scorer = checker.CheckerModel(model.eval(), tokenizer)
    rows = scorer([e.document for e in examples], [e.response for e in examples], [e.history for e in examples])
    predicted = [checker.LABELS[max(range(3), key=row.__getitem__)] for row in rows]
    return {
        "test_examples": len(examples),
        "test_accuracy": round(sum(p == e.label for p, e in zip(predicted, examples)) / len(examples), 4),
        "test_auroc_supported": round(auroc([row[0] for row in rows], [e.label == "supported" for e in examples]), 4),
    }


def _checkpoint(folder: Path, model, optimizer, schedule, step: int) -> None:
    import torch

    trainable = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    with replacing_folder(folder) as staging:
        torch.save(
            {
                "weights": trainable,
                "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(),
                "step": step,
            },
            staging / "state.pt",
        )


def _resume(folder: Path, model, optimizer, schedule) -> int:
    """The step to start from: 0, or the checkpoint's, with its weights and optimizer state restored."""
    import torch

    state_file = folder / "state.pt"
    if not state_file.exists():
        return 0
    state = torch.load(state_file, weights_only=True)
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in state["weights"].items():
            parameters[name].copy_(value)
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    return int(state["step"])
