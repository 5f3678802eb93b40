"""faithkit's own claim checker: its synthetic data rules, its three-way scores against a slow reference, and its
training recipe (reproducible to the byte, resumable)."""

import hashlib
import json
import random
from pathlib import Path

import pytest

from faithkit.errors import ConfigError, InputError

from faithkit.checker import rated, synthetic
from faithkit.checker.examples import KINDS, Example, card, read, write
from faithkit.checker.edits import entity_swap, negation_flip, number_change, role_swap
from faithkit.checker.contexts import (
    MAX_DOCUMENT_CHARS,
    Context,
    section_split,
    SectionSplit,
    topicalchat_contexts,
    wiki_contexts,
)
from faithkit.checker.training import CheckerTraining, lora_model, micro_batches, train
from faithkit.metrics import faithkit_checker
from faithkit.metrics.claim_checkers import ClaimChecker
from faithkit.metrics.claim_windows import document_windows, response_sentences
from faithkit.metrics.registry import get_spec

CORPUS = Path(__file__).parent / "data" / "corpora" / "topicalchat"
SECTIONS = [
    "Elvis Presley was an American singer. He recorded his first songs at Sun Records in Memphis in 1954, where "
    "Sam Phillips was his producer. Scotty Moore played guitar and Bill Black played bass. His first RCA single, "
    "Heartbreak Hotel, was released in January 1956 and became a number one hit in the United States.",
    "The National Football League is a professional American football league of 32 teams. The NFL's 17-week "
    "regular season runs from early September to late December. The Super Bowl was first played in 1967 in Los "
    "Angeles, and the Green Bay Packers won it.",
    "Mount Everest is Earth's highest mountain above sea level, located in the Himalayas. Its elevation of 8,849 "
    "metres was most recently established in 2020 by the Chinese and Nepali authorities. Tenzing Norgay and Edmund "
    "Hillary first reached the summit in 1953.",
]


def contexts():
    """The Topical-Chat fixture's turns, and three longer sections, each with one of the turns' histories."""
    turns = topicalchat_contexts(CORPUS, "valid_freq", min_chars=40)  # the fixture's sections are short
    sections = [Context(f"s{i}", [text], turns[i].history, "", False, False) for i, text in enumerate(SECTIONS)]
    return turns, sections


def sentence(nlp, text):
    return next(nlp(text).sents)


def test_negation_flips_both_ways(nlp):
    assert negation_flip(sentence(nlp, "The museum is open on Mondays."))[0] == "The museum is not open on Mondays."
    assert negation_flip(sentence(nlp, "The museum is not open on Mondays."))[0] == "The museum is open on Mondays."
    assert negation_flip(sentence(nlp, "He signed with Sun Records."))[0] == "He did not sign with Sun Records."
    assert negation_flip(sentence(nlp, "Penguins can't fly."))[0] == "Penguins can fly."


def test_swaps_change_one_fact_and_reuse_the_pool(nlp):
    text = "Elvis Presley recorded at Sun Records with Sam Phillips in Memphis."
    parsed = sentence(nlp, text)
    pool = list(nlp("Scotty Moore played guitar.").ents)
    swapped, detail = entity_swap(parsed, pool, random.Random(0))
    assert swapped.count("Scotty Moore") == 1 and swapped.replace("Scotty Moore", "X") in {
        text.replace(name, "X") for name in ("Elvis Presley", "Sam Phillips")
    }
    assert detail.startswith("PERSON")
    assert role_swap(parsed)[0] == "Sam Phillips recorded at Sun Records with Elvis Presley in Memphis."
    changed, _ = number_change(sentence(nlp, "The tower was finished in 1889."), random.Random(0))
    year = int(changed.split()[-1].rstrip("."))
    assert changed.startswith("The tower was finished in ") and year != 1889 and abs(year - 1889) <= 12


def test_build_is_deterministic_and_splits_by_section(nlp):
    turns, sections = contexts()
    assert len(turns) == 4 and wiki_contexts(CORPUS, turns, "valid_rare", seed=0, min_chars=40) == []  # rare reads all
    first = synthetic.build(turns, sections, nlp, size=40, seed=3, split=SectionSplit(0.5))
    second = synthetic.build(turns, sections, nlp, size=40, seed=3, split=SectionSplit(0.5))
    assert [vars(e) for e in first] == [vars(e) for e in second] and len(first) >= 10
    train_sections = {e.section for e in first if e.split == "train"}
    assert not train_sections & {e.section for e in first if e.split == "test"}
    assert all(e.label == KINDS[e.kind][0] for e in first)


def test_written_data_reads_back_and_bad_lines_name_the_file(tmp_path, nlp):
    examples = synthetic.build(*contexts(), nlp, size=20, seed=0, split=SectionSplit(0.0))
    paths = write(examples, tmp_path, card(examples, ["fixture"], 0))
    assert [vars(e) for e in read(paths["train"])] == [vars(e) for e in examples]
    assert "| extractive | supported |" in (tmp_path / "README.md").read_text()
    paths["train"].write_text('{"label": "maybe"}\n')
    with pytest.raises(Exception, match=r"train.jsonl:1: not a checker example"):
        read(paths["train"])


def test_combine_is_the_worst_sentence_rule():
    assert faithkit_checker.combine([[0.7, 0.2, 0.1]]) == [0.7, 0.2, 0.1]
    supported, generic, unsupported = faithkit_checker.combine([[0.1, 0.85, 0.05], [0.8, 0.1, 0.1]])
    assert unsupported == 0.1
    assert supported == pytest.approx(0.9 * 0.8 / 0.9)
    assert generic == pytest.approx(1 - 0.1 - supported)


@pytest.fixture(scope="module")
def checker_folders(tmp_path_factory, tiny_llama):
    """The tiny Llama saved as a folder, and a random (non-zero) LoRA adapter on it saved as faithkit ships one."""
    import torch
    from peft import LoraConfig, get_peft_model

    model, tokenizer = tiny_llama
    base = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    torch.manual_seed(1)
    lora = LoraConfig(r=4, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False)
    adapted = get_peft_model(model, lora)
    adapted.peft_config["default"].base_model_name_or_path = str(base)
    adapter = tmp_path_factory.mktemp("adapter")
    adapted.save_pretrained(adapter)
    adapted.unload()
    return base, adapter


def slow_reference(model, tokenizer, document, history, response, window, stride):
    """One forward per (window, sentence), the label words' next-token probabilities from the full vocabulary's
    logits; per sentence its best window's probabilities and text."""
    import torch

    ids = faithkit_checker.label_token_ids(tokenizer)
    judged = []
    for claim in response_sentences(response):
        best = None
        for part in document_windows(document, tokenizer, window, stride):
            encoded = tokenizer(faithkit_checker.prompt(part, history, claim), return_tensors="pt")
            with torch.no_grad():
                logits = model(**encoded).logits[0, -1, ids]
            probabilities = torch.softmax(logits, dim=-1).tolist()
            best = (probabilities, part) if best is None or probabilities[0] > best[0][0] else best
        judged.append((claim, *best))
    return judged


def test_checker_metric_equals_slow_reference(checker_folders):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base, adapter = checker_folders
    metric = ClaimChecker("faithkit-checker", nli_model=str(adapter), window=8, stride=6, batch_size=3)
    documents = ["Sam Phillips produced Elvis at Sun Records in Memphis. Bill Black played bass.", "Short one."]
    histories = [["Who produced Elvis?"], []]
    responses = ["It was Sam Phillips.  He worked at Sun Records in 1954.", "That's cool!"]
    rows = metric.compute_rows(documents, histories, responses)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(adapter)).eval()
    tokenizer = AutoTokenizer.from_pretrained(base)
    for row, document, history, response in zip(rows, documents, histories, responses):
        judged = slow_reference(model, tokenizer, document, history, response, 8, 6)
        expected = faithkit_checker.combine([probabilities for _, probabilities, _ in judged])
        got = [
            row["faithkit_checker_supported"],
            row["faithkit_checker_generic"],
            row["faithkit_checker_hallucination"],
        ]
        assert got == pytest.approx(expected, abs=1e-5)
        assert row["faithkit_checker"] == pytest.approx(1 - expected[2], abs=1e-5)  # no reading.json: 1 - P(U)
        assert row["faithkit_checker_verdict"] == float(row["faithkit_checker"] >= 0.5)
        sentences = sorted(row["sentences"], key=lambda sentence: sentence["start"])
        assert [s["text"] for s in sentences] == [claim for claim, _, _ in judged]
        assert [response[s["start"] : s["end"]] for s in sentences] == [claim for claim, _, _ in judged]
        for sentence, (_, probabilities, part) in zip(sentences, judged):
            assert [sentence[k] for k in ("supported", "generic", "unsupported")] == pytest.approx(
                probabilities, abs=1e-5
            )
            assert document[sentence["window_start"] : sentence["window_end"]] == part
        assert [s["unsupported"] for s in row["sentences"]] == sorted(
            (s["unsupported"] for s in sentences), reverse=True
        )
    assert get_spec("faithkit-checker").score_keys == (
        "faithkit_checker",
        "faithkit_checker_verdict",
        "faithkit_checker_supported",
        "faithkit_checker_generic",
        "faithkit_checker_hallucination",
    )


def tiny_data(folder: Path, nlp) -> Path:
    examples = synthetic.build(*contexts(), nlp, size=30, seed=0, split=SectionSplit(0.0))[:24]
    for label in ("supported", "unsupported"):
        for example in [e for e in examples if e.label == label][:2]:
            example.split = "test"
    write(examples, folder, card(examples, ["fixture"], 0))
    return folder


def adapter_bytes(run: Path) -> bytes:
    return (run / "adapter" / "adapter_model.safetensors").read_bytes()


@pytest.mark.slow  # checker training runs: 2.5 s of CPU
def test_training_reruns_to_the_same_adapter_and_resumes(tmp_path, checker_folders, nlp, monkeypatch):
    base, _ = checker_folders
    data = tiny_data(tmp_path / "data", nlp)
    recipe = dict(
        model=str(base), data=str(data), layers=1, lora_rank=2, batch_size=4, mixed_precision="no", save_every=2
    )
    first = train(CheckerTraining(**recipe, output=str(tmp_path / "a")))
    second = train(CheckerTraining(**recipe, output=str(tmp_path / "b")))
    assert adapter_bytes(tmp_path / "a") == adapter_bytes(tmp_path / "b") and first["steps"] == 5
    assert {k: v for k, v in first.items() if k != "train_seconds"} == {
        k: v for k, v in second.items() if k != "train_seconds"
    }
    assert json.loads((tmp_path / "a" / "adapter" / "adapter_config.json").read_text())[
        "base_model_name_or_path"
    ] == str(base)

    real, calls = faithkit_checker.label_logits, []

    def crash_at_step_four(*args):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(faithkit_checker, "label_logits", crash_at_step_four)
    with pytest.raises(KeyboardInterrupt):
        train(CheckerTraining(**recipe, output=str(tmp_path / "c")))
    monkeypatch.setattr(faithkit_checker, "label_logits", real)
    assert (tmp_path / "c" / "checkpoint" / "state.pt").exists()
    with pytest.raises(ConfigError, match=r"holds a checkpoint of a run with other settings \(seed\); give another"):
        train(CheckerTraining(**recipe, output=str(tmp_path / "c"), seed=1))  # a resume never mixes two recipes
    train(CheckerTraining(**recipe, output=str(tmp_path / "c")))
    assert adapter_bytes(tmp_path / "c") == adapter_bytes(tmp_path / "a")


@pytest.mark.slow  # checker training runs: 3 s of CPU
def test_micro_batches_and_checkpointing_make_the_same_update_in_less_memory(tmp_path, checker_folders, nlp):
    """Gradient accumulation over micro-batches and recomputed activations change how a step is computed, not what
    it computes: the adapter equals the whole-batch run's (to float rounding), and reruns are byte-identical."""
    from safetensors.torch import load_file

    base, _ = checker_folders
    data = tiny_data(tmp_path / "data", nlp)
    recipe = dict(model=str(base), data=str(data), layers=2, lora_rank=2, batch_size=4, mixed_precision="no")
    whole = train(CheckerTraining(**recipe, output=str(tmp_path / "whole")))
    frugal = dict(recipe, micro_batch_size=3, gradient_checkpointing=True)  # micro-batches of 3 and 1
    parts = train(CheckerTraining(**frugal, output=str(tmp_path / "parts")))
    again = train(CheckerTraining(**frugal, output=str(tmp_path / "again")))
    assert adapter_bytes(tmp_path / "parts") == adapter_bytes(tmp_path / "again")
    assert adapter_bytes(tmp_path / "parts") != adapter_bytes(tmp_path / "whole")  # other sums, other rounding
    expected, got = (load_file(tmp_path / run / "adapter" / "adapter_model.safetensors") for run in ("whole", "parts"))
    assert expected.keys() == got.keys()
    for name, tensor in expected.items():
        assert got[name].allclose(tensor, atol=1e-6), name
    assert {k: v for k, v in parts.items() if k != "train_seconds"} == {
        k: v for k, v in again.items() if k != "train_seconds"
    }
    assert parts["test_accuracy"] == whole["test_accuracy"] and parts["steps"] == whole["steps"]
    model, tokenizer = lora_model(CheckerTraining(**frugal))
    assert model.get_base_model().is_activation_checkpointing
    embedded = model.get_input_embeddings()(tokenizer("a b", return_tensors="pt")["input_ids"])
    assert not embedded.requires_grad  # the frozen blocks below the adapter get no backward pass
    logged = [json.loads(line)["loss"] for line in (tmp_path / "parts" / "log.jsonl").read_text().splitlines()]
    assert logged == pytest.approx(
        [json.loads(line)["loss"] for line in (tmp_path / "whole" / "log.jsonl").read_text().splitlines()], abs=1e-4
    )


def test_micro_batches_cut_a_step_in_order():
    group = [Example(str(i), "d", [], "r", "supported", "extractive", "s") for i in range(8)]
    assert [[e.id for e in part] for part in micro_batches(group, 3)] == [["0", "1", "2"], ["3", "4", "5"], ["6", "7"]]
    assert micro_batches(group, None) == [group] and micro_batches(group, 8) == [group]


@pytest.mark.slow  # two checker trainings, each in its own process: 19 s of CPU
def test_the_adapter_folder_is_the_same_bytes_whatever_the_hash_seed(tmp_path, checker_folders, nlp):
    """peft writes ``target_modules`` in a set's order, which follows ``PYTHONHASHSEED``: two runs of one recipe in
    two processes wrote two adapter configs until training sorted them."""
    import os
    import subprocess
    import sys

    base, _ = checker_folders
    data = tiny_data(tmp_path / "data", nlp)
    recipe = dict(model=str(base), data=str(data), layers=1, lora_rank=2, batch_size=4, mixed_precision="no")
    folders = []
    for seed in ("1", "2"):
        output = tmp_path / f"seed{seed}"
        code = "import json, sys; from faithkit.checker.training import CheckerTraining, train; "
        code += "train(CheckerTraining(**json.loads(sys.argv[1])))"
        environment = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
        run = subprocess.run(
            [sys.executable, "-c", code, json.dumps({**recipe, "output": str(output)})],
            env=environment,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        folders.append({path.name: path.read_bytes() for path in sorted((output / "adapter").iterdir())})
    assert folders[0] == folders[1]
    assert json.loads(folders[0]["adapter_config.json"])["target_modules"] == sorted(
        json.loads(folders[0]["adapter_config.json"])["target_modules"]
    )


def test_no_checker_output_is_written_through_a_link(tmp_path, checker_folders, nlp):
    """Issue 52, case 2: train.jsonl, README.md, config.json, adapter/ and checkpoint/ linked to files outside their
    folder are replaced (the link, not what it points at), and log.jsonl, which grows line by line, is refused."""
    from faithkit.errors import OutputError

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "adapter").mkdir()
    for name in ("train.jsonl", "README.md", "config.json", "log.jsonl", "adapter/keep.txt"):
        (outside / name).write_text(f"outside {name}\n")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train.jsonl", "README.md"):
        (data / name).symlink_to(outside / name)
    tiny_data(data, nlp)
    assert not (data / "train.jsonl").is_symlink() and (data / "train.jsonl").read_text().startswith("{")
    base, _ = checker_folders
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").symlink_to(outside / "config.json")
    (run / "adapter").symlink_to(outside / "adapter", target_is_directory=True)
    recipe = CheckerTraining(
        model=str(base),
        data=str(data),
        output=str(run),
        layers=1,
        lora_rank=2,
        batch_size=4,
        max_examples=4,
        mixed_precision="no",
    )
    (run / "log.jsonl").symlink_to(outside / "log.jsonl")
    with pytest.raises(OutputError, match=r"log.jsonl is a symbolic link, and faithkit writes no file through a link"):
        train(recipe)
    (run / "log.jsonl").unlink()
    train(recipe)
    assert not (run / "adapter").is_symlink() and (run / "adapter" / "adapter_model.safetensors").is_file()
    assert {path.name: path.read_text() for path in outside.rglob("*") if path.is_file()} == {
        name.split("/")[-1]: f"outside {name}\n"
        for name in ("train.jsonl", "README.md", "config.json", "log.jsonl", "adapter/keep.txt")
    }


def test_training_refuses_missing_or_empty_data(tmp_path, checker_folders):
    base, _ = checker_folders
    recipe = CheckerTraining(model=str(base), data=str(tmp_path / "none"), output=str(tmp_path / "run"))
    with pytest.raises(InputError, match=r"none/train.jsonl not found; make the data with 'faithkit checker data'"):
        train(recipe)
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "train.jsonl").write_text("")
    with pytest.raises(InputError, match=r"train.jsonl holds no examples"):
        train(recipe)


@pytest.mark.slow
def test_shipped_checker_loads_offline_and_tells_a_swap(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    metric = ClaimChecker("faithkit-checker")
    document = "Elvis Presley's producer at Sun Records was Sam Phillips; Scotty Moore played guitar."
    rows = metric.compute_rows(
        [document] * 3,
        [["Who produced Elvis?"]] * 3,
        ["His producer was Sam Phillips.", "His producer was Scotty Moore.", "Haha, I love that!"],
    )
    assert rows[0]["faithkit_checker"] > rows[1]["faithkit_checker"]
    assert rows[1]["faithkit_checker_hallucination"] > rows[0]["faithkit_checker_hallucination"]
    assert rows[2]["faithkit_checker_generic"] == max(rows[i]["faithkit_checker_generic"] for i in range(3))


def test_the_gemma_recipe_is_the_shipped_one_on_another_base_model():
    """configs/checker/gemma3.yaml (docs/checker.md's Gemma run) changes the base model and its output only."""
    from faithkit.settings.configfile import read_yaml

    configs = Path(__file__).parent.parent / "configs" / "checker"
    shipped, gemma = read_yaml(configs / "smollm2.yaml"), read_yaml(configs / "gemma3.yaml")
    assert gemma["data"] == shipped["data"]
    assert {k: v for k, v in gemma["training"].items() if shipped["training"].get(k) != v} == {
        "model": "gemma3-270m",
        "output": "runs/checker-gemma",
    }
    assert CheckerTraining(**gemma["training"]).model == "gemma3-270m"  # the recipe's own fields


# ---- rated generations as examples ------------------------------------------------------------


def rated_row(number: int, sections: list[str], response: str, answers: dict[str, str], row: str = "") -> dict:
    """A row as 'faithkit annotate export' writes it (the fields the recipe reads, and the system)."""
    return {
        "id": f"task:{number}:a",
        "row": row or f"conv:{number}",
        "system": "plain",
        "document": "\n".join(sections),
        "history": ["Tell me about the town."],
        "response": response,
        "ratings": {"faithfulness": answers},
    }


def town(number: int) -> str:
    return (
        f"Section {number} tells a long story about the town of Example{number}, its river, its bridges and its mills."
    )


def test_rated_label_rule():
    assert rated.rated_label(["agree", "agree"]) == "supported"
    assert rated.rated_label(["agree", "disagree"]) == "unsupported"
    assert rated.rated_label(["neutral", "disagree"]) == "unsupported"
    assert rated.rated_label(["neutral", "neutral"]) == "generic"
    assert rated.rated_label(["agree", "neutral"]) is None


def test_rated_examples_split_by_section_and_keep_test_sections_together():
    towns = [town(number) for number in range(40)]
    test = [text for text in towns if section_split(text, 0.5) == "test"]
    train = [text for text in towns if section_split(text, 0.5) == "train"]
    excluded = train[5]
    rows = [
        rated_row(0, [test[0], train[0]], "Example river.", {"ann": "agree", "bob": "agree"}),  # a test section
        rated_row(1, [train[0], train[1]], "Bridges!", {"ann": "agree", "bob": "disagree"}),  # shares train[0]: test
        rated_row(2, [train[2]], "Nice.", {"ann": "neutral", "bob": "neutral"}),  # train
        rated_row(3, [train[3], train[4]], "Mills.", {"ann": "agree", "bob": "neutral"}),  # mixed: left out
        rated_row(4, [excluded], "Example.", {"ann": "disagree"}),  # read by the evaluation split: test
        rated_row(5, [train[2]], "Nice.", {"cy": "disagree"}, row="conv:2"),  # row 2 again, rated elsewhere
    ]
    examples, held_out, held_rows, left_out = rated.rated_examples(rows, 0.5, 0.0, {excluded})
    assert left_out == 1
    assert [(e.id, e.label, e.split, e.source, e.detail) for e in examples] == [
        ("rated_supported-0", "supported", "test", "rated:task:0:a", "faithfulness: agree, agree"),
        ("rated_unsupported-0", "unsupported", "test", "rated:task:1:a", "faithfulness: agree, disagree"),
        ("rated_unsupported-1", "unsupported", "train", "rated:task:2:a", "faithfulness: neutral, neutral, disagree"),
        ("rated_unsupported-2", "unsupported", "test", "rated:task:4:a", "faithfulness: disagree"),
    ]
    assert held_out == {test[0], train[0], train[1], excluded} and held_rows == {"conv:0", "conv:1", "conv:4"}
    assert examples[2].document == train[2] and examples[2].history == ["Tell me about the town."]
    everything, held_out, _, _ = rated.rated_examples(rows, 0.5, 1.0, {excluded})  # every document held out
    assert {e.split for e in everything} == {"test"} and train[2] in held_out


def test_a_long_rated_document_is_cut_to_the_sentences_that_share_most_words():
    filler = " ".join(f"Filler sentence number {i} says nothing of note." for i in range(30))
    target = "The Hawkeyes play football at Kinnick Stadium in Iowa City."
    document = filler + "\n" + filler + " " + target + " " + filler
    window = rated.best_window(document, "They play at Kinnick Stadium, right?")
    assert target in window and len(window) <= MAX_DOCUMENT_CHARS
    assert window.startswith("Filler sentence number") and "\n" not in window
    assert rated.best_window(target, "anything") == target


def test_build_holds_rated_test_sections_out_of_training(nlp):
    turns, sections = contexts()
    examples = synthetic.build(turns, sections, nlp, size=40, seed=3, split=SectionSplit(0.0, frozenset(SECTIONS[:1])))
    key = hashlib.sha256(SECTIONS[0].encode()).hexdigest()[:12]
    assert {e.split for e in examples if e.section == key} == {"test"}
    assert {e.split for e in examples if e.section != key} == {"train"}


def test_read_rated_names_a_bad_line(tmp_path):
    path = tmp_path / "rated.jsonl"
    good = rated_row(0, [town(0)], "Nice.", {"ann": "agree"})
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "ratings": {"faithfulness": {"ann": "yes"}}}) + "\n")
    with pytest.raises(InputError) as caught:
        rated.read_rated(path)
    assert str(caught.value) == (
        f"{path}, line 2: ratings.faithfulness must map each rater to one of agree, neutral, disagree; give a file "
        "that 'faithkit annotate export' wrote"
    )
    path.write_text(json.dumps({**good, "history": "one turn"}) + "\n")
    with pytest.raises(InputError, match=r"line 1: history is \"one turn\" where a list is expected"):
        rated.read_rated(path)


def test_exported_ratings_are_read_as_examples(tmp_path):
    from faithkit.annotate import System, build_task, read_annotations, read_key
    from faithkit.annotate.exports import rated_rows
    from tests.test_annotate import generate_output, simulate, write_exports

    a = generate_output(tmp_path / "plain.jsonl", [f"It is 330 metres tall ({i})." for i in range(6)])
    b = generate_output(tmp_path / "pmi.jsonl", [f"It was built in 1925 ({i})." for i in range(6)])
    build_task(System.from_file(a), System.from_file(b), tmp_path / "task", contexts=6)
    key = read_key(tmp_path / "task")
    exports = write_exports(tmp_path, key, simulate(key, (0.9, 0.7)), ("ann", "bob"))
    path = tmp_path / "rated.jsonl"
    path.write_text(
        "".join(json.dumps(row) + "\n" for row in rated_rows(tmp_path / "task", read_annotations(key, exports)))
    )
    rows = rated.read_rated(path)
    examples, _, _, left_out = rated.rated_examples(rows, 0.0, 0.0, set())
    labels = [rated.rated_label(list(row["ratings"]["faithfulness"].values())) for row in rows]
    assert [e.label for e in examples] == [label for label in labels if label] and left_out == labels.count(None)
    assert [e.response for e in examples] == [row["response"] for row, label in zip(rows, labels) if label]


def test_the_rated_recipe_is_the_gemma_one_with_rated_data_and_a_smaller_peak():
    """configs/checker/gemma3-rated.yaml: the Gemma recipe, its data with the rated file (a key the lead points at
    the export), trained in micro-batches of 2 (the same update) in float32."""
    from faithkit.checker.synthetic import CheckerData
    from faithkit.settings.configfile import read_yaml
    from faithkit.settings.options import from_mapping

    configs = Path(__file__).parent.parent / "configs" / "checker"
    gemma, rated_recipe = read_yaml(configs / "gemma3.yaml"), read_yaml(configs / "gemma3-rated.yaml")
    assert {k: v for k, v in rated_recipe["data"].items() if gemma["data"].get(k) != v} == {
        "output": "runs/checker-data-rated",
        "rated": ["benchmarks/data/ratings/rated-valid_freq.jsonl"],
        "rated_test_share": 0.0,
    }
    assert {k: v for k, v in rated_recipe["training"].items() if gemma["training"].get(k) != v} == {
        "data": "runs/checker-data-rated",
        "output": "runs/checker-gemma-rated",
        "epochs": 1.0,
        "micro_batch_size": 2,
        "mixed_precision": "no",
    }
    assert from_mapping(CheckerData, rated_recipe["data"]).rated == ["benchmarks/data/ratings/rated-valid_freq.jsonl"]
    assert from_mapping(CheckerTraining, rated_recipe["training"]).micro_batch_size == 2
