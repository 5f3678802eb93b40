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
            evaluate.load(evaluate_path("overlap-f1")),
        ]
    )
    combined.add_batch(**batch(COLUMNS, 0, 3))
    combined.add_batch(**batch(COLUMNS, 3, 6))
    result = combined.compute()
    pmi = PMIFaith(model=model_folder, unconditional=False).compute(**COLUMNS)
    overlap = load_metric("overlap-f1").compute(documents=COLUMNS["documents"], responses=COLUMNS["responses"])
    assert result == {**pmi, **overlap}
    assert combined.compute(**COLUMNS) == result  # overlap F1 takes no histories: combine hands it its own columns


def test_the_lexical_module_takes_references_and_has_its_card():
    module = evaluate.load(evaluate_path("lexical"))
    references = [f"gold {i}" for i in range(len(DEMO))]
    given = {"documents": COLUMNS["documents"], "responses": COLUMNS["responses"], "references": references}
    assert module.compute(**given) == load_metric("lexical").compute(**given)
    assert {"knowledge_precision", "token_f1", "bleu", "corpus_bleu"} <= module.compute(**given).keys()
    card = metric_card("lexical")
    assert module.description == card["Metric Description"] and module.citation.startswith("@article{adlakha")
    assert list(module.features) == ["documents", "responses", "references"]


def test_a_missing_column_is_one_error_naming_it_and_a_string_is_no_list():
    lexical = evaluate.load(evaluate_path("lexical"))
    with pytest.raises(ValueError) as error:
        lexical.compute(documents=["Penguins live in Antarctica."], responses=["They live there."])
    assert str(error.value) == (
        "lexical: compute() needs references= (the gold responses); its inputs are documents, responses, references"
    )
    overlap = evaluate.load(evaluate_path("overlap-f1"))
    with pytest.raises(ValueError) as error:
        overlap.add_batch(responses=["They live there."])
    assert str(error.value) == (
        "overlap-f1: add_batch() needs documents= (the grounding documents); its inputs are documents, responses"
    )
    with pytest.raises(TypeError) as error:
        overlap.compute(documents="Penguins live in Antarctica.", responses=["They live there."])
    assert str(error.value) == "overlap-f1: documents must be a list, got a single string; wrap it in a list"
    assert overlap.compute(documents=["Red apples."], responses=["Red apples."]) == {
        "overlap_f1": [1.0],
        "mean_overlap_f1": 1.0,
    }


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
    with pytest.raises(ConfigError, match=r"no evaluate module 'bleurt'; choose one of pmi-faith, minimal-edit, "):
        evaluate_path("bleurt")
    with pytest.raises(ConfigError, match=r"no evaluate module 'bleu'; choose one of "):
        evaluate_path("bleu")  # document-bleu's name before
    with pytest.raises(ConfigError, match=r"no evaluate module 'knowledge-precision'; choose one of "):
        evaluate_path("knowledge-precision")  # its name until the modules took the registry's names: lexical


@pytest.mark.slow  # a fresh process: evaluate imports transformers' pipelines
def test_loads_from_the_folder_path_with_the_hub_offline(tmp_path):
    """A fresh process with HF_HUB_OFFLINE=1 and empty caches loads the module from its folder by path."""
    code = (
        "import evaluate; m = evaluate.load(sys.argv[1]); "
        "print(m.compute(documents=['The tower is tall.'], responses=['The tower is tall.'], references=['Tall.']))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    result = subprocess.run(
        [sys.executable, "-c", "import sys; " + code, evaluate_path("lexical")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("{'knowledge_precision': [1.0], 'token_f1': [0.5], 'bleu': [")


# ---- every metric of the registry, walked: its module loads under its name and computes what the metric does ----


@pytest.fixture(scope="module")
def offline_options(tmp_path_factory, model_folder, roberta_tokenizer, smollm2_tokenizer, checker_folders):
    """Options under which each metric runs here, offline and small: tiny random models of each claim checker's
    architecture (tests/test_claim_checkers.py), the tiny adapter of tests/test_checker.py, the tiny GPT-2 as judge LM,
    Q²'s and e2e-NLI's offline stages on it; llm-judge's server is started by the test."""
    import torch
    from transformers import T5ForConditionalGeneration

    from tests.test_claim_checkers import _hhem_folder, _save, _t5_config, _tiny_deberta, _tiny_roberta

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("checkers")
    roberta3 = _save(_tiny_roberta(roberta_tokenizer, labels=3), roberta_tokenizer, root / "roberta3")
    roberta2 = _save(_tiny_roberta(roberta_tokenizer, labels=2), roberta_tokenizer, root / "roberta2")
    t5 = _save(T5ForConditionalGeneration(_t5_config(smollm2_tokenizer)), smollm2_tokenizer, root / "t5")
    deberta = _save(_tiny_deberta(smollm2_tokenizer), smollm2_tokenizer, root / "deberta")
    hhem, _ = _hhem_folder(smollm2_tokenizer, root)
    windows = {"window": 6, "stride": 4, "device": "cpu"}
    lm = {"model": model_folder, "device": "cpu"}
    return {
        "pmi-faith": lm,
        "minimal-edit": lm,
        "faith-judge": lm,
        "q2": {"qg_model": "rules", "qa_model": f"scoring:{model_folder}", "nli_model": f"labels:{model_folder}"},
        "e2e-nli": {"nli_model": f"labels:{model_folder}"},
        "nli-roberta-large-mnli": {"nli_model": roberta3, **windows},
        "minicheck-roberta-large": {"nli_model": roberta2, **windows},
        "minicheck-deberta-v3-large": {"nli_model": deberta, **windows},
        "minicheck-flan-t5-large": {"nli_model": t5, **windows},
        "hhem-2.1-open": {"nli_model": hhem, **windows},
        "alignscore-style": {"nli_model": roberta3, **windows},
        "faithkit-checker": {"nli_model": str(checker_folders[1]), **windows},
        "faithkit-checker-smollm2": {"nli_model": str(checker_folders[1]), **windows},
        "faithkit-checker-gemma": {"nli_model": str(checker_folders[1]), **windows},
        "llm-judge": {},
        "overlap-f1": {},
        "document-bleu": {},
        "lexical": {},
        "form": {},
    }


from tests.test_checker import checker_folders  # noqa: E402, F401  (fixtures)
from tests.test_claim_checkers import roberta_tokenizer, smollm2_tokenizer  # noqa: E402, F401


def test_every_registered_metric_has_one_module_under_its_name():
    from faithkit.metrics.registry import METRIC_NAMES

    assert list(MODULES) == list(METRIC_NAMES)
    folders = sorted(path.name for path in Path(evaluate_path("form")).parent.iterdir() if path.is_dir())
    assert sorted(MODULES.values()) == [name for name in folders if name != "__pycache__"]


@pytest.mark.parametrize("name", list(MODULES))
def test_each_metric_loads_with_evaluate_and_computes_what_the_metric_computes(name, offline_options):
    from tests.cli.fake_engine import FakeEngine

    with FakeEngine(answer="Agree.") as server:
        options = {**offline_options[name], **({"server": server.url} if name == "llm-judge" else {})}
        module = evaluate.load(evaluate_path(name), **options)
        columns = {
            "documents": [
                "The Eiffel Tower is 330 metres tall and was finished in 1889.",
                "Penguins live in Antarctica.",
            ],
            "histories": [["User: How tall is the Eiffel Tower?"], []],
            "responses": ["It is 330 metres tall. It was finished in 1889.", "They live in the Arctic."],
            "references": ["It is 330 metres tall.", "In Antarctica."],
        }
        given = {key: columns[key] for key in module.inputs}
        expected = load_metric(name, **options).compute(
            **{key: columns[key] for key in ("documents", "histories", "responses", "references") if key in given}
            if "documents" in given
            else {"documents": ["", ""], "responses": columns["responses"]}
        )
        result = module.compute(**given)
        assert result == expected
    # one flat dict, as evaluate's own modules give: per-row lists and corpus numbers under the metric's keys
    assert all(isinstance(value, (int, float, list)) for value in result.values()), result
    assert list(module.features) == list(module.inputs) and module.registry_name == name
    card = metric_card(MODULES[name])
    assert module.description == card["Metric Description"] and f'evaluate_path("{name}")' in card["How to Use"]
