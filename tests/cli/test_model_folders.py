"""A model or adapter folder that cannot load is one ``error:`` line naming the folder and the file (issue 52,
case 4): weights cut short (``model.safetensors``, ``adapter_model.safetensors``), adapter weights as a pickle,
an adapter whose base is itself or another adapter (a loop), an adapter without weights. Each is found before any
row is read or model loaded."""

from __future__ import annotations

import json
import os
import pickle
import shutil

import pytest

from .helpers import write_jsonl

ROWS = [{"id": "a", "document": "Apples ripen in autumn.", "history": ["When?"], "response": "In autumn."}]


@pytest.fixture(scope="module")
def adapter_folders(tmp_path_factory, tiny_llama):
    """The tiny Llama saved as a folder, and a LoRA adapter on it as peft saves one."""
    from peft import LoraConfig, get_peft_model

    model, tokenizer = tiny_llama
    base = tmp_path_factory.mktemp("base")
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    adapted = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))
    adapted.peft_config["default"].base_model_name_or_path = str(base)
    adapter = tmp_path_factory.mktemp("adapter")
    adapted.save_pretrained(adapter)
    adapted.unload()
    return base, adapter


def _cut(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _one_line(run, start: str) -> str:
    assert run.code == 2 and run.out == "" and "Traceback" not in run.err, run.err
    assert run.err.count("\n") == 1 and run.err.startswith(start), run.err
    return run.err


def _checker(faithkit, tmp_path, adapter):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    return faithkit(
        "score", "--metric", "faithkit-checker", "--nli-model", adapter, "--input", rows, "--output", tmp_path / "o"
    )


def test_model_weights_cut_short_are_one_line_naming_the_file(faithkit, model_folder, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(model_folder, folder)
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    _cut(weights)
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    run = faithkit("score", "--metric", "pmi-faith", "--model", folder, "--input", rows, "--output", tmp_path / "o")
    said = _one_line(run, f"error: faithkit score: argument --model: {weights} is no whole safetensors file: ")
    assert f"and the file holds {size // 2:,} bytes: it was cut short; copy or save the model folder {folder}" in said


@pytest.mark.parametrize("cut", [0.5, 0.001])
def test_adapter_weights_cut_short_are_one_line_naming_the_file(faithkit, adapter_folders, tmp_path, cut):
    adapter = tmp_path / "adapter"
    shutil.copytree(adapter_folders[1], adapter)
    _cut(adapter / "adapter_model.safetensors", cut)
    said = _one_line(
        _checker(faithkit, tmp_path, adapter),
        f"error: {adapter / 'adapter_model.safetensors'} is no whole safetensors file: ",
    )
    assert said.endswith("; copy or train the adapter again\n")


def test_pickled_adapter_weights_are_refused_and_never_read(faithkit, adapter_folders, tmp_path):
    class Marker:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'ran'}",)

    adapter = tmp_path / "adapter"
    shutil.copytree(adapter_folders[1], adapter)
    (adapter / "adapter_model.safetensors").unlink()
    (adapter / "adapter_model.bin").write_bytes(pickle.dumps(Marker(), protocol=2))
    _one_line(
        _checker(faithkit, tmp_path, adapter),
        f"error: adapter folder {adapter}: its weights are a pickle ({adapter / 'adapter_model.bin'}), which could "
        "run code when read, so faithkit does not load it; save the adapter as safetensors",
    )
    assert not (tmp_path / "ran").exists()


def test_an_adapter_without_weights_is_one_line(faithkit, adapter_folders, tmp_path):
    adapter = tmp_path / "adapter"
    shutil.copytree(adapter_folders[1], adapter)
    (adapter / "adapter_model.safetensors").unlink()
    _one_line(
        _checker(faithkit, tmp_path, adapter),
        f"error: adapter folder {adapter}: it has no adapter_model.safetensors; give the folder peft's save_pretrained",
    )


@pytest.mark.parametrize("loop", ["itself", "another"])
def test_an_adapter_whose_base_leads_back_to_an_adapter_is_one_line(faithkit, adapter_folders, tmp_path, loop):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, base in ((first, first if loop == "itself" else second), (second, first)):
        shutil.copytree(adapter_folders[1], folder)
        config = json.loads((folder / "adapter_config.json").read_text())
        (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(base)}))
    which = "the adapter folder itself" if loop == "itself" else "another adapter folder"
    _one_line(
        _checker(faithkit, tmp_path, first),
        f"error: {first / 'adapter_config.json'}: base_model_name_or_path is {first if loop == 'itself' else second}, "
        f"{which}; an adapter's base is the model it was trained on",
    )


def test_a_model_folder_holding_an_adapter_on_itself_is_one_line_before_training(faithkit, adapter_folders, tmp_path):
    """A whole model with an adapter beside it, naming the folder itself as its base: transformers loads the base it
    names, then the adapter, so 'checker train --model' (which reads no adapter) once trained on it unasked."""
    from .test_checker_commands import _examples

    folder = tmp_path / "model"
    shutil.copytree(adapter_folders[0], folder)
    for path in adapter_folders[1].glob("adapter_*"):
        shutil.copy(path, folder / path.name)
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": str(folder)}))
    data = _examples(tmp_path / "data", ["supported", "unsupported"], ["supported", "unsupported"])
    run = faithkit("checker", "train", "--model", folder, "--data", data, "--output", tmp_path / "run", "--layers", "1")
    _one_line(
        run,
        f"error: {folder / 'adapter_config.json'}: base_model_name_or_path is {folder}, the adapter folder itself; "
        "an adapter's base is the model it was trained on",
    )
    assert not (tmp_path / "run" / "adapter").exists()


def test_a_whole_adapter_still_loads(faithkit, adapter_folders, tmp_path):
    run = _checker(faithkit, tmp_path, adapter_folders[1])
    assert run.code == 0, run.err
