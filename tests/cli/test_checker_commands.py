"""``faithkit checker data`` and ``checker train`` are as safe as every other command (issue 52, cases 2 to 4):
their outputs go through faithkit/data/files.py (never through a link, one run per folder, one line for a file where the
folder goes), their recipe files are checked by the same declarations as their flags (ranges, paths, unknown
sections and keys, repeated keys), and settings that cannot train are refused before any model loads.

Each case stops before spaCy or a model loads, so each takes a second or two.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from filelock import FileLock

from faithkit.checker.examples import Example


def _recipe(tmp_path, text: str) -> Path:
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def _examples(folder: Path, train_labels, test_labels) -> Path:
    """A data folder as ``checker data`` writes one, with examples of these labels."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, labels in (("train", train_labels), ("test", test_labels)):
        lines = [
            json.dumps(asdict(Example(f"{split}{i}", "Doc.", ["Hi?"], "Resp.", label, "kind", "fixture", split=split)))
            for i, label in enumerate(labels)
        ]
        (folder / f"{split}.jsonl").write_text("".join(line + "\n" for line in lines))
    return folder


def _one_line(run, start: str) -> str:
    assert run.code == 2 and run.out == "" and run.err.count("\n") == 1, run.err
    assert run.err.startswith(start), run.err
    return run.err


@pytest.mark.parametrize("action", ["data", "train"])
@pytest.mark.parametrize("given", ["flag", "file"])
@pytest.mark.parametrize("made", ["file", "link to a file"])
def test_an_output_that_is_a_file_is_one_line_before_any_work(faithkit, tmp_path, action, given, made):
    target = tmp_path / "taken.txt"
    target.write_text("keep me\n")
    output = target
    if made == "link to a file":
        output = tmp_path / "link"
        output.symlink_to(target)
    section = "data" if action == "data" else "training"
    if given == "flag":
        run = faithkit("checker", action, "--output", output)
        _one_line(run, f"error: faithkit checker {action}: argument --output: {output} is a file; give a folder")
    else:
        recipe = _recipe(tmp_path, f"{section}:\n  output: {output}\n")
        run = faithkit("checker", action, "--config", recipe)
        _one_line(run, f"error: config file {recipe}: {section}.output: {output} is a file; give a folder")
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("action", ["data", "train"])
def test_a_second_run_on_one_output_folder_stops_at_once(faithkit, tmp_path, action):
    output = tmp_path / "out"
    output.mkdir()
    data = _examples(tmp_path / "data", ["supported", "unsupported"], ["supported", "unsupported"])
    extra = ("--data", data) if action == "train" else ("--topicalchat", data)
    with FileLock(str(output / ".lock")):
        run = faithkit("checker", action, "--output", output, *extra)
    _one_line(run, f"error: another run is writing {output} (it holds {output}/.lock); wait for it to finish")


def test_the_lock_file_is_never_a_link(faithkit, tmp_path):
    output, elsewhere = tmp_path / "out", tmp_path / "elsewhere.txt"
    output.mkdir()
    elsewhere.write_text("keep me\n")
    (output / ".lock").symlink_to(elsewhere)
    (tmp_path / "corpus").mkdir()
    run = faithkit("checker", "data", "--output", output, "--topicalchat", tmp_path / "corpus")
    _one_line(run, f"error: {output}/.lock is a symbolic link, and faithkit writes no file through a link")
    assert elsewhere.read_text() == "keep me\n"


def test_the_training_output_may_not_be_the_data_it_reads(faithkit, tmp_path):
    data = _examples(tmp_path / "data", ["supported", "unsupported"], ["supported", "unsupported"])
    before = {path.name: path.read_bytes() for path in data.iterdir()}
    recipe = _recipe(tmp_path, f"training:\n  data: {data}\n  output: {data}\n")
    run = faithkit("checker", "train", "--config", recipe)
    _one_line(run, f"error: --output {data} is {data}, which this command reads")
    assert {path.name: path.read_bytes() for path in data.iterdir()} == before


@pytest.mark.parametrize(
    ("key", "value", "flag_says"),
    [
        ("size", "-5", "must be at least 10, got -5"),
        ("size", "0", "must be at least 10, got 0"),
        ("test_share", "2", "must be in [0, 1], got 2"),
        ("size", "many", None),
    ],
)
def test_a_recipe_value_is_checked_as_its_flag_is(faithkit, tmp_path, key, value, flag_says):
    recipe = _recipe(tmp_path, f"data:\n  {key}: {value}\n")
    from_file = faithkit("checker", "data", "--config", recipe, "--output", tmp_path / "out")
    from_flag = faithkit("checker", "data", "--output", tmp_path / "out", f"--{key.replace('_', '-')}", value)
    if flag_says is None:
        _one_line(from_file, f"error: config file {recipe}: data.size must be an integer, got 'many'")
        _one_line(from_flag, "error: faithkit checker data: argument --size: expected a whole number, got 'many'")
    else:
        _one_line(from_file, f"error: config file {recipe}: data.{key} {flag_says}")
        _one_line(from_flag, f"error: faithkit checker data: argument --{key.replace('_', '-')}: {flag_says}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "dat:\n  size: 20\n",
            "unknown section 'dat' (did you mean 'data'?); the accepted sections are data, training",
        ),
        ("trainng:\n  epochs: 1\n", "unknown section 'trainng' (did you mean 'training'?)"),
        ("data:\n  size: 20\nnotes: {}\n", "unknown section 'notes'; the accepted sections are data, training"),
        ("data:\n  sise: 20\n", "unknown key 'data.sise' (did you mean 'data.size'?); the accepted keys are"),
    ],
)
def test_unknown_sections_and_keys_are_refused_with_the_closest_name(faithkit, tmp_path, text, said):
    recipe = _recipe(tmp_path, text)
    for action in ("data", "train"):
        run = faithkit("checker", action, "--config", recipe, "--output", tmp_path / "out")
        assert said in _one_line(run, f"error: config file {recipe}: "), run.err
    assert not (tmp_path / "out").exists()


def test_a_key_given_twice_is_refused_with_both_lines(faithkit, tmp_path):
    recipe = _recipe(tmp_path, "data:\n  size: 2800\n  seed: 0\n  size: 20\n")
    run = faithkit("checker", "data", "--config", recipe, "--output", tmp_path / "out")
    _one_line(
        run,
        f"error: config file {recipe} is not valid YAML at line 4, column 3: the key 'size' is given twice "
        "(first at line 2); keep one",
    )


def test_settings_that_make_no_training_step_are_refused_before_the_model_loads(faithkit, tmp_path):
    data = _examples(tmp_path / "data", ["supported", "unsupported"], ["supported", "unsupported"])
    run = faithkit(
        "checker", "train", "--data", data, "--output", tmp_path / "run", "--max-examples", "2", "--epochs", "0.5"
    )
    _one_line(
        run,
        "error: training: 2 examples in batches of 8 for 0.5 epochs make no training step; raise epochs or "
        "max_examples, or lower batch_size",
    )
    assert not (tmp_path / "run" / "adapter").exists()


@pytest.mark.parametrize("label", ["supported", "unsupported"])
def test_a_test_split_of_one_class_is_refused_before_training(faithkit, tmp_path, label):
    data = _examples(tmp_path / "data", ["supported", "unsupported"], [label, label])
    run = faithkit("checker", "train", "--data", data, "--output", tmp_path / "run")
    said = "every" if label == "supported" else "no"
    _one_line(
        run,
        f"error: {data}/test.jsonl: {said} test example is supported, and the held-out AUROC (supported against the "
        "rest) needs both; make the data again with a larger size or test_share",
    )
    assert not (tmp_path / "run" / "adapter").exists()
