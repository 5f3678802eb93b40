"""Results you can trust after inputs and models change, through the command line as a user runs it.

The numbered cases of issue 15: an edited row is computed again (tests/cli/test_jobs.py), a
folder retrained in place is another model, an unbalanced quote is an error naming its line,
a folder that is not a model stops before any row, an output never overwrites its input;
then the smaller ones (BOM, list values, explicit defaults, umask, one-line YAML errors, a
failed training start). Then issue 25's: no output written through a link (sidecars and output
pairs included), no pickle run (model weights here; run folders in tests/test_train.py), a full
disk is one line and a rerun completes, NaN and infinity refused, files read back checked.
"""

import json
import math
import os
import re
import shutil
import stat
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from faithkit.data import read_results

from .helpers import ROOT, write_jsonl

ROWS = [
    {"id": f"r{i}", "document": f"Apples number {i} grow on trees.", "history": "hi", "response": f"apples {i} grow"}
    for i in range(3)
]


def _one_error(run, start: str):
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert run.err.strip().splitlines() == [run.error_lines[0]] and run.error_lines[0].startswith(f"error: {start}")
    return run.error_lines[0]


def test_a_model_folder_retrained_in_place_is_refused_naming_the_model(faithkit, model_folder, tmp_path, monkeypatch):
    import torch
    from safetensors.torch import load_file, save_file

    monkeypatch.setenv("FAITHKIT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "runs-x"
    shutil.copytree(model_folder, folder)
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out.jsonl"
    argv = ["generate", "--model", folder, "--input", rows, "--output", out, "--max-new-tokens", "2"]
    assert faithkit(*argv).code == 0
    before = out.read_text()
    weights = load_file(folder / "model.safetensors")
    save_file(
        {name: tensor + 1 for name, tensor in weights.items()}, folder / "model.safetensors", metadata={"format": "pt"}
    )  # "fine-tuned again": the same file names and sizes, other weights
    line = _one_error(faithkit(*argv), f"{out} was written by a different job (model.hash: ")
    assert "to continue it, rerun with its settings" in line
    assert out.read_text() == before
    assert torch.equal(
        load_file(folder / "model.safetensors")["transformer.wte.weight"], weights["transformer.wte.weight"] + 1
    )


def test_an_unterminated_quote_is_an_error_naming_its_line(faithkit, tmp_path):
    rows, out = tmp_path / "t.csv", tmp_path / "t.jsonl"
    rows.write_text(
        'id,knowledge,message,response\nu1,Sky.,Q?,Blue.\nu2,Sea.,Q?,"Yes it is salty.\n'
        "u3,Grass.,Q?,Green.\nu4,Snow.,Q?,White.\n"
    )
    _one_error(
        faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out),
        f"{rows}: line 3 opens a quoted field that never closes, so the 2 lines after it would be read into "
        f"that one field; close the quote, or read the file literally with --quoting none",
    )
    assert not out.exists()
    # a quoted field that does close may hold newlines and commas, also on the last line
    rows.write_text('id,knowledge,message,response\nu1,Sky.,Q?,"Blue,\nand more"\nu2,Sea.,Q?,"Salty\nsea"\n')
    assert faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out).code == 0
    assert [r["response"] for r in read_results(out)] == ["Blue,\nand more", "Salty\nsea"]


@pytest.mark.parametrize("command", ["score", "generate"])
def test_a_folder_that_is_not_a_model_stops_before_any_row(faithkit, tmp_path, command):
    empty, rows, out = tmp_path / "empty", write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out.jsonl"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    argv = ["score", "--metric", "pmi-faith"] if command == "score" else ["generate"]
    _one_error(
        faithkit(*argv, "--model", empty, "--input", rows, "--output", out),
        f"faithkit {command}: argument --model: {empty} is not a model folder: it has no weights",
    )
    assert not out.exists()


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink"])
def test_the_output_is_never_the_input(faithkit, tmp_path, link):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    before = rows.read_bytes()
    out = {"same": rows, "symlink": tmp_path / "link.jsonl", "hardlink": tmp_path / "hard.jsonl"}[link]
    if link == "symlink":
        out.symlink_to(rows)
    if link == "hardlink":
        os.link(rows, out)
    for extra in ([], ["--restart"]):
        _one_error(
            faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out, *extra),
            f"--output {out} is the input {rows} (the same file), and writing results there would destroy "
            f"it; choose another --output",
        )
        assert rows.read_bytes() == before


def test_an_out_folder_may_not_hold_the_input(faithkit, tmp_path):
    out = tmp_path / "eval"
    out.mkdir()
    rows = write_jsonl(out / "rows.csv", [])
    rows.write_text("knowledge,message,response\nSky.,Q?,Blue.\n")
    _one_error(
        faithkit(
            "meta-eval", "q2-wow", "--metric", "overlap-f1", "--consistent", rows, "--inconsistent", rows, "--out", out
        ),
        f"--out {out} holds the input {rows}",
    )
    assert sorted(p.name for p in out.iterdir()) == ["rows.csv"]


def test_paths_of_item_6_past_the_command_line(faithkit, tmp_path):
    """Files that pass the up-front checks (UTF-8 in their first megabyte, not binary) but fail deeper."""
    config = tmp_path / "sweep.yaml"
    config.write_text("alpha: [0, 0.5\n")
    _one_error(
        faithkit("sweep", "--config", config, "--out", tmp_path / "s"),
        f"config file {config} is not valid YAML at line 2, column 1: expected ',' or ']', but got",
    )
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "a", "document": "D", "response": "R"}\nnot json\n')
    run = faithkit(
        "explain", "--metric", "overlap-f1", "--input", rows, "--html", tmp_path / "r.html", "--score-key", "overlap_f1"
    )
    assert run.code == 0 and "1 not scored" in run.out  # rows: the bad line is that row's error, as for score
    scores = tmp_path / "scores.jsonl"
    scores.write_bytes(b'{"id": "1", "q2": 0.5}\n' * 70000 + '{"id": "2", "q2": "caf\u00e9"}\n'.encode("latin-1"))
    _one_error(
        faithkit("meta-eval", "system-level", "--consistent-scores", scores, "--inconsistent-scores", scores),
        f"{scores} is not UTF-8 text (byte 1610022); save it as UTF-8",
    )


def test_a_bom_is_not_text(faithkit, tmp_path):
    for name, text in (
        ("rows.jsonl", '{"id": "a", "document": "D x", "response": "x"}\n'),
        ("rows.tsv", "id\tdocument\tresponse\na\tD x\tx\n"),
    ):
        rows, out = tmp_path / name, tmp_path / f"{name}.out.jsonl"
        rows.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out).code == 0
        [record] = read_results(out)
        assert record["id"] == "a" and "error" not in record


def test_lists_and_objects_where_text_goes_are_row_errors(faithkit, tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"id": "ok", "document": "D x", "history": ["hi", "there"], "response": "x"},
            {"id": "doc", "document": ["D"], "history": [], "response": "x"},
            {"id": "turn", "document": "D", "history": [{"speaker": "user"}], "response": "x"},
            {"id": "resp", "document": "D", "history": [], "response": {"text": "x"}},
            {"id": "bool", "document": "D", "history": [], "response": True},
            {"id": "turns", "document": "D", "history": ["hi", False], "response": "x"},
        ],
    )
    out = tmp_path / "out.jsonl"
    assert faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out).code == 0
    errors = {r["id"]: r.get("error") for r in read_results(out)}
    assert errors == {
        "ok": None,
        "doc": "row doc: field 'document' (document) holds [\"D\"] where a string is expected; fix the file",
        "turn": 'row turn: field \'history\' (history) holds [{"speaker": "user"}] where a string or a list of '
        "strings (the turns) is expected; fix the file",
        "resp": 'row resp: field \'response\' (response) holds {"text": "x"} where a string is expected; fix the file',
        "bool": "row bool: field 'response' (response) holds true where a string is expected; fix the file",
        "turns": "row turns: field 'history' (history) holds [\"hi\", false] where a string or a list of strings (the "
        "turns) is expected; fix the file",
    }


def test_a_setting_given_at_its_default_is_the_setting_left_out(faithkit, model_folder, tmp_path):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out.jsonl"
    argv = ["score", "--metric", "pmi-faith", "--model", model_folder, "--input", rows, "--output", out]
    assert faithkit(*argv).code == 0
    run = faithkit(*argv, "--normalize", "mean")
    assert run.code == 0 and "0 scored, 3 already done" in run.err


def test_results_follow_the_umask(faithkit, tmp_path):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out.jsonl"
    old = os.umask(0o022)
    try:
        assert faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out).code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert stat.S_IMODE(Path(f"{out}.meta.json").stat().st_mode) == 0o644


def test_a_folder_saved_in_place_follows_the_umask(tmp_path):
    """The checker's adapter/ and checkpoint/ are saved beside their place and renamed (replacing_folder): the
    staging folder, private as tempfile makes it, once stayed private after the rename."""
    from faithkit.data.files import replacing_folder

    old = os.umask(0o022)
    try:
        with replacing_folder(tmp_path / "adapter") as staging:
            (staging / "adapter_config.json").write_text("{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "adapter").stat().st_mode) == 0o755
    assert [path.name for path in tmp_path.iterdir()] == ["adapter"]


@pytest.mark.slow
def test_a_training_folder_left_by_a_failed_start_is_reused(faithkit, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the config's data paths start at the repository
    bad, out = write_jsonl(tmp_path / "bad.jsonl", [{"id": "1"}]), tmp_path / "run"
    argv = [
        "train",
        "--config",
        "configs/train/tiny-gpt2.yaml",
        "--output-dir",
        out,
        "--max-steps",
        "1",
        "--generate-rows",
        "0",
    ]
    _one_error(faithkit(*argv, "--train-file", bad), f"{bad}: no column for 'document'")
    assert not out.exists()  # the rows are read (and checked) before the folder is made
    _one_error(faithkit(*argv, "--tokenizer", str(tmp_path / "no-tokenizer")), "model.tokenizer")  # after the config
    assert [p.name for p in out.iterdir()] == ["run_config.yaml"]
    run = faithkit(*argv)
    assert run.code == 0 and json.loads(run.out.splitlines()[-1])["steps"] == 1


def test_messages_name_the_commands_own_output_flag(faithkit, tmp_path):
    from filelock import FileLock

    rows = tmp_path / "c.csv"
    rows.write_text("knowledge,message,response\nSky is blue.,Q?,Blue.\n")
    out = tmp_path / "eval"
    argv = ["meta-eval", "q2-wow", "--metric", "overlap-f1", "--consistent", rows, "--inconsistent", rows, "--out", out]
    assert faithkit(*argv).code == 0
    with FileLock(str(out / "scores.jsonl.lock")):
        _one_error(faithkit(*argv), f"another run is writing {out / 'scores.jsonl'}")
        assert faithkit(*argv).error_lines[0].endswith("wait for it to finish, or choose another --out")


# ---- issue 25: no output written through a link, sidecars and output pairs included ----------------------------
def _link(kind: str, target: Path, link: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        link.symlink_to(target)
    else:
        os.link(target, link)


def _begin_tsv(path: Path) -> Path:
    path.write_text(
        "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
        "t5\twow\tRed apples grow.\tQ?\tred apples\tFully attributable\n"
        "t5\twow\tRed apples grow.\tQ?\tblue cars\tNot fully attributable\n"
    )
    return path


def _annotate_inputs(tmp_path: Path) -> tuple[Path, Path]:
    rows = [{"id": f"row{i}", "document": "Jazz began in New Orleans.", "history": ["Tell me."]} for i in range(4)]
    return (
        write_jsonl(
            tmp_path / "A2.jsonl", [{**row, "response": f"In New Orleans ({i})."} for i, row in enumerate(rows)]
        ),
        write_jsonl(tmp_path / "B2.jsonl", [{**row, "response": f"In Paris ({i})."} for i, row in enumerate(rows)]),
    )


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
@pytest.mark.parametrize(
    "command",
    [
        "meta-eval begin",
        "meta-eval q2-wow",
        "meta-eval system-level",
        "annotate build",
        "annotate report",
        "explain",
        "sweep",
        "train",
    ],
)
def test_a_link_in_an_output_folder_to_an_input_is_refused(faithkit, tmp_path, kind, command):
    if command == "meta-eval system-level":
        source = write_jsonl(tmp_path / "scores.jsonl", [{"id": "a", "overlap_f1": 0.5}])
        link, argv = (
            tmp_path / "o" / "system_level.json",
            [
                "meta-eval",
                "system-level",
                "--consistent-scores",
                source,
                "--inconsistent-scores",
                source,
                "--out",
                tmp_path / "o",
            ],
        )
    elif command == "annotate report":
        task = tmp_path / "t"
        assert (
            faithkit(
                "annotate",
                "build",
                "--a-file",
                _annotate_inputs(tmp_path)[0],
                "--b-file",
                _annotate_inputs(tmp_path)[1],
                "--out",
                task,
            ).code
            == 0
        )
        source = tmp_path / "answers.json"
        source.write_text(json.dumps({"format": "faithkit-annotation-answers", "annotator": "ann", "answers": {}}))
        link, argv = task / "report.csv", ["annotate", "report", task, source]
    elif command == "sweep":
        source = write_jsonl(tmp_path / "rows.jsonl", ROWS)
        link, argv = (
            tmp_path / "o" / "report.html",
            ["sweep", "--generator", "no-such-model", "--input", source, "--out", tmp_path / "o"],
        )
    elif command == "train":
        source = tmp_path / "train.jsonl"
        shutil.copy(ROOT / "tests/data/train/tiny_train.jsonl", source)
        link, argv = (
            tmp_path / "o" / "metrics.csv",
            [
                "train",
                "--config",
                ROOT / "configs/train/tiny-gpt2.yaml",
                "--train-file",
                source,
                "--dev-file",
                source,
                "--output-dir",
                tmp_path / "o",
            ],
        )
    elif command == "meta-eval begin":
        source = _begin_tsv(tmp_path / "b2.tsv")
        link, argv = (
            tmp_path / "o" / "results.json",
            ["meta-eval", "begin", "--metric", "overlap-f1", "--dev", source, "--out", tmp_path / "o"],
        )
    elif command == "meta-eval q2-wow":
        source = tmp_path / "c.csv"
        source.write_text("knowledge,message,response\nSky is blue.,Q?,Blue.\n")
        link, argv = (
            tmp_path / "o" / "summary.csv",
            [
                "meta-eval",
                "q2-wow",
                "--metric",
                "overlap-f1",
                "--consistent",
                source,
                "--inconsistent",
                source,
                "--out",
                tmp_path / "o",
            ],
        )
    elif command == "annotate build":
        source, other = _annotate_inputs(tmp_path)
        link, argv = (
            tmp_path / "t" / "annotate.html",
            ["annotate", "build", "--a-file", source, "--b-file", other, "--out", tmp_path / "t"],
        )
    else:
        source = write_jsonl(tmp_path / "rows.jsonl", ROWS)
        link, argv = (
            tmp_path / "x.scores.jsonl.meta.json",
            ["explain", "--metric", "overlap-f1", "--input", source, "--html", tmp_path / "x.html"],
        )
    before = source.read_bytes()
    _link(kind, source, link)
    line = _one_error(faithkit(*argv), "")
    assert str(source) in line and "destroy it" in line, line
    assert source.read_bytes() == before


def test_an_output_named_by_the_inputs_sidecar_or_by_another_output_option_is_refused(faithkit, tmp_path):
    out = tmp_path / "o.jsonl"
    meta = write_jsonl(tmp_path / "o.jsonl.meta.json", ROWS)
    before = meta.read_bytes()
    _one_error(
        faithkit("score", "--metric", "overlap-f1", "--input", meta, "--output", out),
        f"--output {out} (through o.jsonl.meta.json, which a job writes beside it) is the input {meta} (the "
        f"same file), and writing results there would destroy it; choose another --output",
    )
    assert meta.read_bytes() == before and not out.exists()
    rows, page = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "x.html"
    _one_error(
        faithkit("explain", "--metric", "overlap-f1", "--input", rows, "--html", page, "--scores-output", page),
        f"--html {page} and --scores-output {page} are the same file, and one would overwrite the other; give "
        f"them different names",
    )
    assert not page.exists()


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_result_file_that_is_a_link_elsewhere_is_refused_and_a_whole_file_replaces_its_link(faithkit, tmp_path, kind):
    rows, elsewhere = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "notes.txt"
    elsewhere.write_text("my notes\n")
    out = tmp_path / "out.jsonl"
    _link(kind, elsewhere, out)
    what = "a symbolic link" if kind == "symlink" else "a hard link (the file has another name too)"
    _one_error(
        faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", out),
        f"{out} is {what}, and faithkit writes no file through a link (it would change the file it points "
        f"at); remove the link, or choose another --output",
    )
    page = tmp_path / "page.html"
    _link(kind, elsewhere, page)  # a page is written whole: it replaces the link
    assert faithkit("explain", "--metric", "overlap-f1", "--input", rows, "--html", page).code == 0
    assert elsewhere.read_text() == "my notes\n" and not page.is_symlink() and "<html" in page.read_text()


def test_pickled_model_weights_are_refused_with_one_line(faithkit, model_folder, tmp_path):
    import pickle

    class Marker:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'ran'}",)

    folder = tmp_path / "model"
    shutil.copytree(model_folder, folder)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Marker(), protocol=2))
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    _one_error(
        faithkit("generate", "--model", folder, "--input", rows, "--output", tmp_path / "out.jsonl"),
        f"{folder}: {folder / 'pytorch_model.bin'} is a pickle holding more than tensors, which could run code when "
        f"read, so faithkit does not load it (torch's safe loader refused it); use a model saved as safetensors",
    )
    assert not (tmp_path / "ran").exists()


# ---- issue 25, case 4: NaN and infinity are refused for every kind of option --------------------------------
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--strategy", "pmi", "--alpha", "nan"], "faithkit generate: argument --alpha: nan is not a usable number"),
        (["--strategy", "pmi", "--top-p", "nan"], "faithkit generate: argument --top-p: nan is not a usable number"),
        (["--strategy", "cad", "--alpha", "inf"], "faithkit generate: argument --alpha: inf is not a usable number"),
        (["--do-sample", "--temperature", "-inf"], "faithkit generate: argument --temperature: -inf is not a usable"),
    ],
)
def test_nan_and_infinity_are_refused_on_the_command_line(faithkit, model_folder, tmp_path, argv, message):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out.jsonl"
    _one_error(faithkit("generate", "--model", model_folder, "--input", rows, "--output", out, *argv), message)
    assert not out.exists()


def test_nan_and_infinity_are_refused_in_configs_and_by_the_range_check(faithkit, tmp_path):
    from faithkit.decoding import PMI, GenerationOptions
    from faithkit.errors import ConfigError
    from faithkit.metrics.registry import load_metric
    from faithkit.sweep.config import load_config as load_sweep
    from faithkit.train import load_config as load_training

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("generator: g\ninput: x\nout: o\nalpha: [0.25, .nan]\n")
    with pytest.raises(
        ConfigError,
        match=rf"^config file {re.escape(str(sweep))}: alpha nan is not a usable number; give a finite value$",
    ):  # the file and the key, as written
        load_sweep(sweep).validate()
    sweep.write_text("generator: g\ninput: x\nout: o\nstrategies: [{name: cad, alpha: [.inf]}]\n")
    with pytest.raises(ConfigError, match=rf"^config file {re.escape(str(sweep))}: strategies\[0\]: cad: alpha inf is"):
        load_sweep(sweep).validate()
    with pytest.raises(ConfigError, match=r"^alpha nan is not a usable number; give a finite value$"):
        PMI(alpha=float("nan")).check()
    with pytest.raises(ConfigError, match=r"^temperature inf is not a usable number"):
        GenerationOptions(do_sample=True, temperature=float("inf")).validate()
    with pytest.raises(ConfigError, match=r"^metric 'overlap-f1' option threshold nan is not a usable number"):
        load_metric("overlap-f1", threshold=float("nan"))
    training = tmp_path / "train.yaml"
    config = yaml.safe_load((ROOT / "configs/train/tiny-gpt2.yaml").read_text())
    training.write_text(yaml.safe_dump({**config, "training": {**config["training"], "learning_rate": math.nan}}))
    with pytest.raises(ConfigError, match=r"learning_rate nan is not a usable number; give a finite value"):
        load_training(training)
    _one_error(
        faithkit("train", "--config", ROOT / "configs/train/tiny-gpt2.yaml", "--warmup-ratio", "nan"),
        "faithkit train: argument --warmup-ratio: nan is not a usable number; give a finite value",
    )


# ---- issue 25, case 3: a full disk is one line, and a rerun with space completes ---------------------------------
@contextmanager
def _small_disk(folder: Path, size: int):
    """A tmpfs of ``size`` bytes at ``folder``; yields a function that resizes it (skipped where mounting is not
    allowed)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield lambda new_size: subprocess.run(["mount", "-o", f"remount,size={new_size}", str(folder)], check=True)
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


FULL_DISK_ROWS = [
    {
        "id": f"f{i}",
        "document": f"Document {299 - i}: apples number {i} grow on tall trees.",
        "history": ["Tell me about apples, please."],
        "response": f"Apples {i} grow on trees.",
    }
    for i in range(300)
]


def test_a_full_disk_is_one_line_and_a_rerun_with_space_completes(faithkit, tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", FULL_DISK_ROWS)
    with _small_disk(tmp_path / "small", 64 * 1024) as resize:
        out = tmp_path / "small" / "o.jsonl"
        argv = ["score", "--metric", "overlap-f1", "--input", rows, "--output", out]
        line = _one_error(faithkit("-q", *argv), f"cannot write {out}: No space left on device; ")
        saved = out.read_text().count("\n")  # whole lines; the one cut short is dropped on the rerun
        assert 0 < saved < len(FULL_DISK_ROWS) and line.endswith(
            f"; {saved} records are saved in {out}; free space (or fix the folder) and rerun the same command to "
            f"continue"
        )
        _one_error(faithkit("-q", *argv), f"cannot write {out}")  # still full
        resize(1024 * 1024)
        run = faithkit(*argv)
        assert run.code == 0, run.err
        assert [r["id"] for r in read_results(out)] == [row["id"] for row in FULL_DISK_ROWS]


def test_a_final_reorder_that_does_not_fit_is_one_line_and_resumable(faithkit, tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", FULL_DISK_ROWS)
    whole = tmp_path / "whole.jsonl"
    assert faithkit("score", "--metric", "overlap-f1", "--input", rows, "--output", whole).code == 0
    pages = -(-whole.stat().st_size // 4096)
    with _small_disk(tmp_path / "small", (pages + pages // 2 + 1) * 4096) as resize:
        out = tmp_path / "small" / "o.jsonl"
        argv = ["score", "--metric", "overlap-f1", "--input", rows, "--output", out]
        for _ in range(2):  # the run that computes every row, then a rerun while still full
            _one_error(
                faithkit("-q", *argv),
                f"cannot put {out} in input order: No space left on device; all 300 records "
                f"are saved in it, in the order they were computed; free space and rerun "
                f"the same command to put them in order",
            )
            assert sorted(r["id"] for r in read_results(out)) == sorted(row["id"] for row in FULL_DISK_ROWS)
        resize(4 * pages * 4096)
        run = faithkit(*argv)
        assert run.code == 0 and "0 scored, 300 already done" in run.err
        assert out.read_bytes() == whole.read_bytes()


# ---- issue 25, case 6: files read back are checked, duplicate ids name both lines, booleans are not text -----------
def test_hand_edited_scores_and_keys_are_one_line_naming_the_file_and_field(faithkit, tmp_path):
    scores = write_jsonl(
        tmp_path / "scores.jsonl", [{"id": "a", "document": "D", "response": "R", "pmi": "high", "token_pmi": [0.1]}]
    )
    _one_error(
        faithkit("explain", "--metric", "pmi-faith", "--input", scores, "--html", tmp_path / "p.html"),
        f"{scores}: record 'a' has pmi \"high\" where a number (or null) is expected; fix the file, or score "
        f"its rows again",
    )
    write_jsonl(scores, [{"id": "a", "document": "D", "response": "R", "pmi": 0.5, "token_pmi": ["x"]}])
    _one_error(
        faithkit("explain", "--metric", "pmi-faith", "--input", scores, "--html", tmp_path / "p.html"),
        f"{scores}: record 'a' has token_pmi [\"x\"] where a list of numbers (or nulls) is expected",
    )
    write_jsonl(scores, [{"id": "a", "q2": 0.5}, {"id": "b", "q2": True}])
    _one_error(
        faithkit("meta-eval", "system-level", "--consistent-scores", scores, "--inconsistent-scores", scores),
        f"{scores}: record 'b' has q2 true where a number (or null) is expected",
    )
    from tests.test_annotate import generate_output

    a = generate_output(tmp_path / "greedy.jsonl", [f"It is 330 metres tall ({i})." for i in range(6)])
    b = generate_output(tmp_path / "pmi.jsonl", [f"They built it in 1925 ({i})." for i in range(6)])
    task = tmp_path / "task"
    assert faithkit("annotate", "build", "--a-file", a, "--b-file", b, "--out", task, "--contexts", "4").code == 0
    key = json.loads((task / "key.json").read_text())
    answers = write_jsonl(tmp_path / "ann.json", [])
    answers.write_text(
        json.dumps({"format": "faithkit-annotation-answers", "task": key["task"], "annotator": "ann", "answers": {}})
    )
    for field, value, problem in (
        ("sides", ["a", "a"], "items[0].sides must hold a and b"),
        ("scores", {"a": {"q2": "x"}}, "items[0].scores must map each system to its"),
    ):
        (task / "key.json").write_text(json.dumps({**key, "items": [{**key["items"][0], field: value}]}))
        _one_error(faithkit("annotate", "report", task, answers), f"{task / 'key.json'}: {problem}")


def test_a_weights_file_replaced_with_its_size_and_mtime_kept_is_hashed_again(tmp_path, monkeypatch):
    import hashlib

    from faithkit.serving.models import file_digest

    monkeypatch.setenv("FAITHKIT_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"old weights")
    assert file_digest(weights) == hashlib.sha256(b"old weights").hexdigest()
    times = weights.stat()
    weights.write_bytes(b"new weights")  # the same size, in place (the same inode)
    os.utime(weights, ns=(times.st_atime_ns, times.st_mtime_ns))  # as `touch -r` would restore it
    assert weights.stat().st_mtime_ns == times.st_mtime_ns and weights.stat().st_size == times.st_size
    assert file_digest(weights) == hashlib.sha256(b"new weights").hexdigest()
    assert file_digest(weights) == hashlib.sha256(b"new weights").hexdigest()  # from the cache now


def test_json_that_faithkit_writes_holds_no_nan(faithkit, tmp_path):
    rows = tmp_path / "c.csv"  # the same response on both sides: every score ties, the correlations are undefined
    rows.write_text("knowledge,message,response\nSky is blue.,Q?,Blue.\n")
    out = tmp_path / "o"
    argv = ["meta-eval", "q2-wow", "--metric", "overlap-f1", "--consistent", rows, "--inconsistent", rows, "--out", out]
    assert faithkit(*argv).code == 0

    def strict(text):
        return json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in faithkit's JSON"))

    results = strict((out / "summary.json").read_text())["results"]
    assert results and all(result["spearman"] is None for result in results)
    for line in (out / "scores.jsonl").read_text().splitlines():
        strict(line)
