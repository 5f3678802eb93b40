"""The model card (README.md) of each saved checkpoint, in the layout transformers' Trainer writes.

YAML front matter from ``huggingface_hub``'s :class:`~huggingface_hub.ModelCardData` (library,
base model, datasets, tags, and ``model-index`` with the checkpoint's dev results, one entry
per metric), then the Trainer's sections: what the model was fine-tuned from and on, the dev
results, intended use (how to decode it with the evaluation's strategies), training data, hyperparameters, the
table of every evaluation so far and the framework versions.
"""

from __future__ import annotations

from pathlib import Path

from ..settings.options import flag
from ..decoding.base import parameter_text
from ..decoding.two_view.strategies import PMI
from ..data.files import write_text
from .config import TrainConfig, evaluation_decoders

TASK = "text-generation"


def model_card(config: TrainConfig, name: str, step: int, values: dict, evaluations: list[dict]) -> str:
    """The card of a checkpoint saved at ``step`` whose dev values are ``values``; ``evaluations`` is the run so far."""
    from huggingface_hub import ModelCard

    body = (
        _summary(config, name, step, values)
        + _intended_uses(config)
        + _data_section(config)
        + _procedure(config, step, evaluations)
    )
    return str(ModelCard(f"---\n{_card_data(config, name, values).to_yaml()}\n---\n{body}"))


def _card_data(config: TrainConfig, name: str, values: dict):
    """The front matter: library, base model and datasets when the hub can link them, tags, and the dev results."""
    from huggingface_hub import EvalResult, ModelCardData

    base, dataset, split = _base_model(config), _dataset(config), _dev_split(config)
    return ModelCardData(
        model_name=name,
        base_model=base if _is_hub_id(base) else None,
        datasets=[dataset] if _is_hub_id(dataset) else None,
        library_name="transformers",
        tags=["faithkit", "document-grounded-dialogue"],
        eval_results=[
            EvalResult(
                task_type=TASK,
                dataset_type=dataset,
                dataset_name=dataset,
                dataset_split=split,
                metric_type=key,
                metric_name=key,
                metric_value=value,
            )
            for key, value in values.items()
        ],
    )


def _summary(config: TrainConfig, name: str, step: int, values: dict) -> str:
    """The title, what the model was fine-tuned from and on with its dev results, and the model description."""
    base, d = _base_model(config), config.data
    origin = (
        f"a fine-tuned version of [{base}](https://huggingface.co/{base})"
        if _is_hub_id(base)
        else f"a fine-tuned version of {base}"
        if base
        else "trained from a random initialisation"
    )
    results = "\n".join(f"- {key}: {value:.4f}" for key, value in values.items())
    return f"""
# {name}

This model is {origin} on {_data_text(config)}.
It achieves the following results on the evaluation set ({_dataset(config)}, {_dev_split(config)}) at step {step}:
{results}

## Model description

A document-grounded dialogue model fine-tuned with faithkit: its input is faithkit's conditioned view of a
document and the last {d.history_turns} dialogue turns (`faithkit.prompts`), cut to {d.max_length} tokens as at
decoding time, and it learns the response tokens only.

"""


def _intended_uses(config: TrainConfig) -> str:
    """How to decode it, in Python and with ``faithkit generate``, with the evaluation's faithful strategy."""
    e = config.evaluation
    decoders = evaluation_decoders(e)
    strategy = next((s for s in decoders.values() if s.name != "plain"), PMI())  # the card shows a faithful decoder
    flags = " ".join(f"--{flag(key)} {parameter_text(value)}" for key, value in strategy.parameters().items())
    return f"""## Intended uses & limitations

Decode it with {strategy.summary}:

```python
from faithkit.serving import models
from faithkit.decoding import generate

model, tokenizer = models.load("path/to/this/folder")
responses = generate(model, tokenizer, documents=["..."], histories=[["...", "..."]],
                     strategy={strategy.spec()!r}, max_new_tokens={e.max_new_tokens})
```

or `faithkit generate --model path/to/this/folder --input rows.jsonl --output out.jsonl --strategy {strategy.name}
{flags}`. The dev metrics {", ".join(f"`{label}/*`" for label in decoders)} score the first {e.generate_rows} dev
rows decoded greedily with each of those strategies. It can still state what the document
does not support; measure faithfulness (e.g. `faithkit score --metric pmi-faith`) before relying on it.

"""


def _data_section(config: TrainConfig) -> str:
    d = config.data
    dev_rows = f", the first {d.max_dev_rows} rows" if d.max_dev_rows else ""
    return f"""## Training and evaluation data

Training: {_data_text(config)}; dev: {_dataset(config)}, {_dev_split(config)}{dev_rows}.

"""


def _procedure(config: TrainConfig, step: int, evaluations: list[dict]) -> str:
    """The hyperparameters, the whole config, every evaluation so far and the framework versions."""
    import accelerate
    import torch
    import transformers

    settings = {**_hyperparameters(config), "steps": step}
    hyperparameters = "\n".join(f"- {key}: {value}" for key, value in settings.items())
    lines = results_table(evaluations) if evaluations else "No evaluation yet."
    return f"""## Training procedure

### Training hyperparameters

The following hyperparameters were used during training:
{hyperparameters}

The whole configuration:

```yaml
{_yaml(config)}
```

### Training results

{lines}

### Framework versions

- Transformers {transformers.__version__}
- Pytorch {torch.__version__}
- Accelerate {accelerate.__version__}
"""


def results_table(evaluations: list[dict]) -> str:
    """Every evaluation's row under one header, keyed by column name: a metric an evaluation lacks (no knowledge
    precision when every response was empty, say) is an empty cell, so the other values stay under their names."""
    from transformers.modelcard import make_markdown_table

    columns = list(dict.fromkeys(key for row in evaluations for key in row if key != "step"))
    return make_markdown_table(
        [
            {"Step": row["step"], **{key: round(row[key], 4) if key in row else "" for key in columns}}
            for row in evaluations
        ]
    )


def write_model_card(folder: Path, *args) -> None:
    """:func:`model_card` as ``folder/README.md``."""
    write_text(folder / "README.md", model_card(*args))


def _base_model(config: TrainConfig) -> str | None:
    return config.model.name if config.model.init == "pretrained" else None


def _dataset(config: TrainConfig) -> str:
    """The dev data's name: the corpus, a hub dataset's id, or the dev file."""
    d = config.data
    return d.corpus or str(d.dev_file).removeprefix("hf:")


def _dev_split(config: TrainConfig) -> str:
    d = config.data
    return d.dev_split if d.corpus or str(d.dev_file).startswith("hf:") else "all"


def _data_text(config: TrainConfig) -> str:
    d = config.data
    rows = f" (the first {d.max_train_rows} rows)" if d.max_train_rows else ""
    if d.corpus:
        return f"the {d.corpus} corpus, split {d.train_split}{rows}"
    return f"the rows of {d.train_file}{rows}"


def _is_hub_id(name: str | None) -> bool:
    """An ``owner/name`` that is not a local folder: the hub can link it."""
    return name is not None and name.count("/") == 1 and not Path(name).exists() and not name.startswith((".", "/"))


def _hyperparameters(config: TrainConfig) -> dict:
    t = config.training
    return {
        "learning_rate": t.learning_rate,
        "train_batch_size": t.batch_size,
        "gradient_accumulation_steps": t.gradient_accumulation_steps,
        "total_train_batch_size": t.batch_size * t.gradient_accumulation_steps,
        "seed": t.seed,
        "optimizer": f"AdamW (weight decay {t.weight_decay})",
        "lr_scheduler_type": "linear",
        "lr_scheduler_warmup_ratio": t.warmup_ratio,
        "max_length": config.data.max_length,
    }


def _yaml(config: TrainConfig) -> str:
    import yaml

    return yaml.safe_dump(config.to_dict(), sort_keys=False).strip()
