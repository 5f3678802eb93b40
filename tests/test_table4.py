"""The shipped Table-4 protocol (configs/experiments/table4): its configs load and check, and a dev sweep's
per-strategy picks are what the test sweep decodes, on tiny models over the corpus fixtures (GPT-2 on Topical-Chat,
BART on FaithDial, as the BART-Large variants run)."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from faithkit.data.corpora import export_corpus
from faithkit.sweep import load_config, run_sweep
from faithkit.sweep.config import chosen_entries
from faithkit.train.config import load_config as load_train_config

TABLE4 = Path(__file__).parent.parent / "configs" / "experiments" / "table4"
FIXTURES = Path(__file__).parent / "data" / "corpora"
TINY = {
    "limit": 3,
    "max_new_tokens": 2,
    "metrics": "lexical",
    "faithfulness": "knowledge_precision",
    "relevance": "token_f1",
    "resamples": 100,
}


def test_every_config_checks(model_folder, tmp_path):
    assert load_train_config(TABLE4 / "train.yaml").data.train_split == "valid_freq"
    strategies = {}
    for path in sorted(TABLE4.glob("*.yaml")):
        if path.name == "train.yaml":
            continue
        config = load_config(
            path, {"generator": model_folder, "input": str(tmp_path / "rows.jsonl"), "out": str(tmp_path / path.stem)}
        )
        strategies[path.stem] = sorted({cell.strategy.name for cell in config.cells()})
    assert strategies == {
        "dev-adacad": ["adacad", "plain"],
        "dev-cad": ["cad", "plain"],
        "dev-pmi": ["plain", "pmi"],
        "dev-rerank": ["plain", "rerank"],
        "test": ["plain"],
    }
    run = (TABLE4 / "run.sh").read_text()
    assert all(f"dev-{family}" in run or "dev-$family" in run for family in ("pmi", "cad", "adacad", "rerank"))


@pytest.fixture(scope="module")
def bart_folder(tmp_path_factory, tiny_bart, bart_tokenizer):
    folder = tmp_path_factory.mktemp("tiny-bart")
    tiny_bart.save_pretrained(folder)
    bart_tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize(
    "corpus, split, family, test_half",
    [("topicalchat", "valid_rare", "rerank", "test"), ("faithdial", "valid", "cad", None)],
)
def test_the_dev_picks_are_decoded_on_other_rows(request, tmp_path, corpus, split, family, test_half):
    """Topical-Chat: choose on the dev half, decode the test half; FaithDial (whose fixture's two dialogues are
    both in the dev half): decode the whole split, as run.sh does with TEST_SPLIT."""
    generator = request.getfixturevalue("model_folder" if corpus == "topicalchat" else "bart_folder")
    dev_rows = export_corpus(corpus, split, tmp_path / "dev.jsonl", path=FIXTURES / corpus, half="dev")
    test_rows = export_corpus(corpus, split, tmp_path / "test.jsonl", path=FIXTURES / corpus, half=test_half)
    assert dev_rows["half_rows"] and test_rows.get("half_rows", test_rows["kept"])
    dev = load_config(
        TABLE4 / f"dev-{family}.yaml",
        {**TINY, "generator": generator, "input": str(tmp_path / "dev.jsonl"), "out": str(tmp_path / "d")},
    )
    if family == "rerank":  # two cells are enough here
        dev = replace(dev, strategies=({"name": "rerank", "n": [2], "candidate_search": ["sample", "beam"]},))
    result = run_sweep(dev)
    best = json.loads((result.out / "best.json").read_text())
    pick = best["by_strategy"][family]
    own = [row for row in result.table if row["strategy"] == family]
    eligible = [row for row in own if row["cell"] in best["eligible"]] if pick["within_bounds"] else own
    assert pick["cell"] == max(eligible, key=lambda row: row["knowledge_precision"])["cell"]
    test = load_config(
        TABLE4 / "test.yaml",
        {
            **TINY,
            "generator": generator,
            "input": str(tmp_path / "test.jsonl"),
            "out": str(tmp_path / "t"),
            "chosen": str(result.out / "best.json"),
        },
    )
    labels = [cell.label for cell in test.cells()]
    assert labels == ["plain", "plain_beam", "plain_beam_sample", pick["cell"]]
    assert chosen_entries(result.out / "best.json")[0]["name"] == family
