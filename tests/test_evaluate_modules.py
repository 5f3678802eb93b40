"""faithkit's metrics through evaluate's own API: evaluate.load from the package folder (offline), compute,
add_batch / add, evaluate.combine, and the same numbers as the registry's metrics."""

import os
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest

from faithkit.data import read_rows
from faithkit.errors import ConfigError
from faithkit.metrics import PMIFaith, evaluate_path, load_metric
from faithkit.metrics.evaluate_modules import MODULES, metric_card

DEMO = [row for row in read_rows(Path(__file__).parents[1] / "examples" / "demo.jsonl")]
COLUMNS = {
    "documents": [r.document for r in DEMO],
    "histories": [r.history for r in DEMO],
    "responses": [r.response for r in DEMO],
}


def batch(columns: dict, start: int, stop: int) -> dict:
    return {name: values[start:stop] for name, values in columns.items()}


def test_pmi_faith_module_equals_pmi_faith_compute_on_the_demo_rows(model_folder):
    expected = PMIFaith(model=model_folder).compute(**COLUMNS)
    module = evaluate.load(evaluate_path("pmi-faith"), model=model_folder)
    assert module.compute(**COLUMNS) == expected
    module.add_batch(**batch(COLUMNS, 0, 4))
    module.add_batch(**batch(COLUMNS, 4, 6))
    assert module.compute() == expected
    for i in range(len(DEMO)):
        module.add(**{name: values[i] for name, values in COLUMNS.items()})
    assert module.compute() == expected


def test_combine_runs_two_faithkit_modules_on_the_same_columns(model_folder):
    combined = evaluate.combine(
        [
            evaluate.load(evaluate_path("pmi-faith"), model=model_folder, unconditional=False),
            evaluate.load(evaluate_path("knowledge-precision")),
        ]
    )
    combined.add_batch(**batch(COLUMNS, 0, 3))
    combined.add_batch(**batch(COLUMNS, 3, 6))
    result = combined.compute()
    pmi = PMIFaith(model=model_folder, unconditional=False).compute(**COLUMNS)
    precision = load_metric("lexical").compute(documents=COLUMNS["documents"], responses=COLUMNS["responses"])
    assert result == {**pmi, **precision}
    assert combined.compute(**COLUMNS) == result  # knowledge precision ignores the histories it is handed


def test_knowledge_precision_module_and_its_card():
    module = evaluate.load(evaluate_path("knowledge-precision"))
    assert module.compute(documents=COLUMNS["documents"], responses=COLUMNS["responses"]) == load_metric(
        "lexical"
    ).compute(documents=COLUMNS["documents"], responses=COLUMNS["responses"])
    card = metric_card("knowledge_precision")
    assert module.description == card["Metric Description"] and module.citation.startswith("@article{adlakha")
    assert list(module.features) == ["documents", "responses"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_has_a_card_with_the_sections_evaluate_shows(name):
    card = metric_card(MODULES[name])
    for section in ("Metric Description", "How to Use", "Limitations and Bias", "Citation"):
        assert card[section], (name, section)
    assert "### Inputs" in card["How to Use"] and "### Measured" in card["How to Use"]
    assert card["Citation"].startswith("```bibtex")


def test_options_are_checked_by_the_registry_and_names_by_evaluate_path():
    with pytest.raises(ConfigError, match=r"metric 'pmi-faith' takes no option temperature"):
        evaluate.load(evaluate_path("pmi-faith"), temperature=1.0)
    with pytest.raises(
        ConfigError, match=r"no evaluate module 'bleurt'; choose one of pmi-faith, faith-judge, q2, e2e-nli"
    ):
        evaluate_path("bleurt")


@pytest.mark.slow  # a fresh process: evaluate imports transformers' pipelines
def test_loads_from_the_folder_path_with_the_hub_offline(tmp_path):
    """A fresh process with HF_HUB_OFFLINE=1 and empty caches loads the module from its folder by path."""
    code = (
        "import evaluate; m = evaluate.load(sys.argv[1]); "
        "print(m.compute(documents=['The tower is tall.'], responses=['The tower is tall.']))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = subprocess.run(
        [sys.executable, "-c", "import sys; " + code, evaluate_path("knowledge-precision")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'knowledge_precision': [1.0], 'mean_knowledge_precision': 1.0}"


def test_the_knowledge_precision_module_gives_knowledge_precision_only():
    module = evaluate.load(evaluate_path("knowledge-precision"))
    result = module.compute(documents=COLUMNS["documents"], responses=COLUMNS["responses"])
    assert sorted(result) == ["knowledge_precision", "mean_knowledge_precision"]
