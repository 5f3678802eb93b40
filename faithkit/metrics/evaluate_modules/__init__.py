"""faithkit's metrics as ``evaluate`` modules, shipped inside the package and loaded from their folder, offline.

Every metric of the registry is one, under its registry name (:func:`evaluate_path`):

```python
import evaluate
from faithkit.metrics import evaluate_path

pmi = evaluate.load(evaluate_path("pmi-faith"), model="smollm2-135m")
pmi.add_batch(documents=[...], histories=[[...]], responses=[...])
pmi.compute()  # the same dict as PMIFaith(model="smollm2-135m").compute(...)
```

Each folder (the metric's name with ``_`` for ``-`` and ``.``: ``pmi_faith/``, ``hhem_2_1_open/``) holds the module
``evaluate.load`` imports, named after the folder, and a metric card, ``README.md``. The
modules are thin: :class:`RegistryMetric` gives ``evaluate`` its inputs (as ``Features``) and
the card's text, and hands the rows to the metric :mod:`faithkit.metrics.registry` builds, so
every score has one implementation. ``evaluate.load``'s keyword arguments beyond its own
(``cache_dir``, ``experiment_id``, …) are the metric's options, as on the command line
(``model``, ``batch_size``, ``preset`` …); the metric and its models load once, in
``evaluate.load``.

A module's columns are those its metric reads: ``documents`` and ``responses``, ``histories`` for the metrics that
read the dialogue (PMI-FAITH, faith-judge, minimal-edit, faithkit-checker, llm-judge), ``references`` (the gold
responses) for ``lexical``, and ``responses`` alone for ``form``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import datasets
import evaluate

from ...errors import ConfigError
from ..registry import METRIC_NAMES, check_options, load_metric

FOLDER = Path(__file__).parent
MODULES = {name: name.replace("-", "_").replace(".", "_") for name in METRIC_NAMES}
"""Each metric's evaluate module, by its registry name (as the command line spells metrics) -> its folder here."""

_COLUMNS = {
    "documents": datasets.Value("string"),
    "histories": datasets.List(datasets.Value("string")),
    "responses": datasets.Value("string"),
    "references": datasets.Value("string"),
}
_DESCRIBED = {
    "documents": "the grounding documents",
    "histories": "the dialogue histories",
    "responses": "the responses to score",
    "references": "the gold responses",
}
_EVALUATE_ARGUMENTS = set(inspect.signature(evaluate.EvaluationModule.__init__).parameters) - {"self", "kwargs"}


def evaluate_path(name: str) -> str:
    """The folder of the ``evaluate`` module of the metric ``name``, one of :data:`MODULES` (every registered metric,
    by the one name the registry gives it, and no other), which ``evaluate.load`` reads without the hub.

    Args:
        name (`str`): a metric's registry name.

    Examples:

    ```python
    >>> from pathlib import Path
    >>> from faithkit.metrics import evaluate_path
    >>> Path(evaluate_path("pmi-faith")).name
    'pmi_faith'
    >>> evaluate_path("bleu")
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: no evaluate module 'bleu'; choose one of pmi-faith, minimal-edit, faith-judge, q2, e2e-nli, nli-roberta-large-mnli, minicheck-roberta-large, minicheck-deberta-v3-large, minicheck-flan-t5-large, hhem-2.1-open, alignscore-style, faithkit-checker, faithkit-checker-smollm2, faithkit-checker-gemma, llm-judge, overlap-f1, document-bleu, lexical, form
    ```
    """
    if name not in MODULES:
        raise ConfigError(f"no evaluate module '{name}'; choose one of {', '.join(MODULES)}")
    return str(FOLDER / MODULES[name])


class RegistryMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose work is done by the registry's metric ``registry_name``.

    Subclasses (one per module file) set ``registry_name`` and ``inputs``, the columns ``compute`` and ``add_batch``
    take (``evaluate`` needs each of them in every call).

    Args:
        **kwargs (`Any`): ``evaluate.load``'s own arguments (``cache_dir``, ``experiment_id``, …) and the metric's
            options (``model``, ``batch_size``, …), checked before anything loads.

    Examples:

    ```python
    >>> import evaluate
    >>> from faithkit.metrics import evaluate_path
    >>> overlap = evaluate.load(evaluate_path("overlap-f1"))  # a RegistryMetric
    >>> overlap.add_batch(documents=["Emperor penguins live only in Antarctica."], responses=["They live in the Arctic."])
    >>> overlap.add(documents="Emperor penguins live only in Antarctica.", responses="They live only in Antarctica.")
    >>> [round(f1, 4) for f1 in overlap.compute()["overlap_f1"]]
    [0.3333, 0.6667]
    ```
    """

    registry_name: str
    inputs: tuple[str, ...] = ("documents", "responses")

    @property
    def module(self) -> str:
        """The module's folder here."""
        return MODULES[self.registry_name]

    def __init__(self, **kwargs):
        options = {key: kwargs.pop(key) for key in list(kwargs) if key not in _EVALUATE_ARGUMENTS}
        check_options(self.registry_name, options)
        self.options = options
        self._metric = None
        super().__init__(**kwargs)

    def compute(self, **columns) -> dict | None:
        """``evaluate``'s compute: the rows added so far, and those given here (every one of :attr:`inputs`, or
        none); a missing column is a ValueError naming it."""
        if any(columns.get(name) is not None for name in self.inputs):
            self._check_columns(columns, "compute", batch=True)
        return super().compute(**columns)

    def add_batch(self, **columns) -> None:
        """``evaluate``'s add_batch: rows, every one of :attr:`inputs` given; a missing column is a ValueError."""
        self._check_columns(columns, "add_batch", batch=True)
        super().add_batch(**columns)

    def add(self, **columns) -> None:
        """``evaluate``'s add: one row, every one of :attr:`inputs` given; a missing column is a ValueError."""
        self._check_columns(columns, "add", batch=False)
        super().add(**columns)

    def _check_columns(self, columns: dict, call: str, batch: bool) -> None:
        """One line naming what is missing (evaluate itself fails on ``len(None)``), or a single string where a list
        of them belongs (evaluate would read it as one row per character)."""
        missing = [name for name in self.inputs if columns.get(name) is None]
        if missing:
            needed = ", ".join(f"{name}= ({_DESCRIBED[name]})" for name in missing)
            raise ValueError(f"{self.registry_name}: {call}() needs {needed}; its inputs are {', '.join(self.inputs)}")
        for name in self.inputs:
            if batch and isinstance(columns[name], str):
                raise TypeError(f"{self.registry_name}: {name} must be a list, got a single string; wrap it in a list")

    def _info(self) -> evaluate.MetricInfo:
        card = metric_card(self.module)
        return evaluate.MetricInfo(
            description=card["Metric Description"],
            inputs_description=card["How to Use"],
            citation=card["Citation"].strip().removeprefix("```bibtex").removesuffix("```").strip(),
            features=datasets.Features({name: _COLUMNS[name] for name in self.inputs}),
            reference_urls=re.findall(r"\((https?://[^)]+)\)", card.get("Further References", "")),
        )

    def _download_and_prepare(self, dl_manager) -> None:
        """evaluate.load calls this: the metric and its models load now, once."""
        self._load()

    def _load(self):
        if self._metric is None:
            self._metric = load_metric(self.registry_name, **self.options)
        return self._metric

    def _compute(self, responses, documents=None, histories=None, references=None) -> dict:
        """The registry metric's ``compute`` on the collected rows, with the histories and references given (a module
        without documents, ``form``, hands its metric empty ones)."""
        documents = [""] * len(responses) if documents is None else documents
        return self._load().compute(
            documents=documents, histories=histories, responses=responses, references=references
        )


def metric_card(module: str) -> dict[str, str]:
    """The ``## `` sections of a module's README.md by heading (their text, headings of lower levels included): the
    card is the one source of the module's description, inputs and citation.

    Args:
        module (`str`): the module's folder name (``pmi_faith``).

    Examples:

    ```python
    >>> from faithkit.metrics.evaluate_modules import metric_card
    >>> list(metric_card("pmi_faith"))
    ['Metric Description', 'How to Use', 'Limitations and Bias', 'Citation', 'Further References']
    ```
    """
    text = (FOLDER / module / "README.md").read_text(encoding="utf-8")
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text  # past the YAML front matter
    parts = re.split(r"^## (.+)$", body, flags=re.MULTILINE)
    return {heading.strip(): content.strip() for heading, content in zip(parts[1::2], parts[2::2])}


__all__ = ["MODULES", "RegistryMetric", "evaluate_path", "metric_card"]
