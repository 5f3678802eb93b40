"""faithkit's metrics as ``evaluate`` modules, shipped inside the package and loaded from their folder, offline::

    import evaluate
    from faithkit.metrics import evaluate_path

    pmi = evaluate.load(evaluate_path("pmi-faith"), model="smollm2-135m")
    pmi.add_batch(documents=[...], histories=[[...]], responses=[...])
    pmi.compute()              # the same dict as PMIFaith(model="smollm2-135m").compute(...)

Each folder (``pmi_faith/``, ``faith_judge/``, ``q2/``, ``e2e_nli/``, ``knowledge_precision/``) holds the module
``evaluate.load`` imports, named after the folder, and a metric card, ``README.md``. The
modules are thin: :class:`RegistryMetric` gives ``evaluate`` its inputs (as ``Features``) and
the card's text, and hands the rows to the metric :mod:`faithkit.metrics.registry` builds, so
every score has one implementation. ``evaluate.load``'s keyword arguments beyond its own
(``cache_dir``, ``experiment_id``, …) are the metric's options, as on the command line
(``model``, ``batch_size``, ``preset`` …); the metric and its models load once, in
``evaluate.load``.

``histories``, which PMI-FAITH reads and the others do not, is accepted and ignored by the
others' ``compute``, so ``evaluate.combine`` can hand the same columns to all of them.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import datasets
import evaluate

from ...errors import ConfigError
from ..registry import check_options, load_metric

FOLDER = Path(__file__).parent
MODULES = {
    "pmi-faith": "pmi_faith",
    "faith-judge": "faith_judge",
    "q2": "q2",
    "e2e-nli": "e2e_nli",
    "knowledge-precision": "knowledge_precision",
}
"""An evaluate module's name (as the command line spells metrics) -> its folder here."""

_COLUMNS = {
    "documents": datasets.Value("string"),
    "histories": datasets.List(datasets.Value("string")),
    "responses": datasets.Value("string"),
}
_EVALUATE_ARGUMENTS = set(inspect.signature(evaluate.EvaluationModule.__init__).parameters) - {"self", "kwargs"}


def evaluate_path(name: str) -> str:
    """The folder of faithkit's ``evaluate`` module ``name``: ``pmi-faith``, ``faith-judge``, ``q2``, ``e2e-nli``
    or ``knowledge-precision``."""
    if name not in MODULES:
        raise ConfigError(f"no evaluate module '{name}'; choose one of {', '.join(MODULES)}")
    return str(FOLDER / MODULES[name])


class RegistryMetric(evaluate.Metric):
    """An ``evaluate.Metric`` whose work is done by the registry's metric ``registry_name``.

    Subclasses (one per module file) set ``module``, ``registry_name`` and ``inputs``, the
    columns ``compute`` and ``add_batch`` take.
    """

    module: str
    registry_name: str
    inputs: tuple[str, ...] = ("documents", "histories", "responses")

    def __init__(self, **kwargs):
        options = {key: kwargs.pop(key) for key in list(kwargs) if key not in _EVALUATE_ARGUMENTS}
        check_options(self.registry_name, options)
        self.options = options
        self._metric = None
        super().__init__(**kwargs)

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

    def _compute(self, documents, responses, histories=None) -> dict:
        """The registry metric's ``compute`` on the collected rows; ``histories`` only if the module takes them."""
        if "histories" not in self.inputs:
            histories = None
        return self._load().compute(documents=documents, histories=histories, responses=responses)


def metric_card(module: str) -> dict[str, str]:
    """The ``## `` sections of a module's README.md by heading (their text, headings of lower levels included)."""
    text = (FOLDER / module / "README.md").read_text(encoding="utf-8")
    body = text.split("\n---\n", 1)[1] if text.startswith("---\n") else text  # past the YAML front matter
    parts = re.split(r"^## (.+)$", body, flags=re.MULTILINE)
    return {heading.strip(): content.strip() for heading, content in zip(parts[1::2], parts[2::2])}


__all__ = ["MODULES", "RegistryMetric", "evaluate_path", "metric_card"]
