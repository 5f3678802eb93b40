"""An unknown model or judge name is one error line before any work: exit 2, the name and what HF_HUB_OFFLINE does,
one question to the hub at most, nothing written to the outputs, and no torch imported on the way."""

import shutil
import subprocess
import sys

import huggingface_hub
import pytest
from huggingface_hub import constants

from faithkit.serving.model_names import OFFLINE_HINT, check_model_name

from .helpers import ROOT, subprocess_env, write_jsonl

ROWS = [{"id": "a", "document": "Apples grow on trees.", "history": ["Tell me about apples."], "response": "Yes."}]
TRAIN_CONFIG = ROOT / "configs" / "train" / "smollm2-topicalchat.yaml"


def commands(rows, out):
    """Each command that loads a model, with an unknown name where a model goes, and the role its error names."""
    return {
        "generate": (["generate", "--model", "nosuch/model", "--input", rows, "--output", out / "g.jsonl"], "--model"),
        "sweep generator": (
            ["sweep", "--generator", "nosuch/model", "--scoring-model", "smollm2-135m", "--input", rows, "--out", out],
            "--generator",
        ),
        "sweep scoring model": (
            ["sweep", "--generator", "smollm2-135m", "--scoring-model", "nosuch/model", "--input", rows, "--out", out],
            "--scoring-model",
        ),
        "score": (
            ["score", "--metric", "pmi-faith", "--model", "nosuch/model", "--input", rows, "--output", out / "s.jsonl"],
            "pmi-faith --model",
        ),
        "score q2": (
            ["score", "--metric", "q2", "--preset", "offline", "--qa-model", "scoring:nosuch/model"]
            + ["--input", rows, "--output", out / "q.jsonl"],
            "q2 --qa-model",
        ),
        "rerank": (
            ["rerank", "--model", "nosuch/model", "--input", rows, "--candidates", rows, "--output", out / "r.jsonl"],
            "--model",
        ),
        "meta-eval labels": (
            ["meta-eval", "labels", "--input", rows, "--label-column", "id", "--positive", "a"]
            + ["--metrics", "overlap-f1,faith-judge", "--model", "nosuch/model", "--out", out],
            "faith-judge --model",
        ),
        "meta-eval begin": (
            ["meta-eval", "begin", "--metric", "pmi-faith", "--model", "nosuch/model", "--dev", rows, "--out", out],
            "pmi-faith --model",
        ),
        "train": (
            ["train", "--config", TRAIN_CONFIG, "--model", "nosuch/model", "--output-dir", out],
            "model.name (--model)",
        ),
    }


@pytest.fixture
def hub_unreachable(monkeypatch):
    """The hub asked (HF_HUB_OFFLINE unset) but unreachable, as on a machine without internet; the questions kept."""
    asked = []

    def unreachable(name, **options):
        asked.append((name, options.get("timeout")))
        raise OSError("[Errno -2] Name or service not known")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    return asked


@pytest.mark.parametrize("command", list(commands("rows", ROOT)))
def test_an_unknown_name_is_one_line_after_one_hub_attempt_and_nothing_is_written(
    faithkit, hub_unreachable, tmp_path, command
):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out"
    argv, role = commands(rows, out)[command]
    run = faithkit(*argv)
    assert run.code == 2
    assert run.err == (
        f"error: {role} 'nosuch/model' is not an offline name (smollm2-135m, gemma3-270m), a local folder or in the "
        "Hugging Face cache, and the hub could not be reached (one attempt: [Errno -2] Name or service not known); "
        "use an offline name or a folder, or download it where the hub is reachable (`hf download nosuch/model`) "
        f"and copy the cache ({OFFLINE_HINT})\n"
    )
    assert hub_unreachable == [("nosuch/model", 10.0)]  # one attempt, no retries
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]


def test_under_hf_hub_offline_the_hub_is_not_asked(monkeypatch):
    asked = []
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: asked.append(a))
    with pytest.raises(Exception, match="HF_HUB_OFFLINE is set, so the hub was not asked") as error:
        check_model_name("nosuch/model", "--scoring-model")
    assert str(error.value).startswith("--scoring-model 'nosuch/model' is not an offline name") and asked == []


def test_a_name_the_hub_has_not_a_folder_not_an_id_and_a_known_name(monkeypatch, model_folder, tmp_path):
    from unittest import mock

    from huggingface_hub.errors import RepositoryNotFoundError

    def missing(name, **options):
        raise RepositoryNotFoundError("Repository Not Found", response=mock.Mock(headers={}, status_code=404))

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "model_info", missing)
    with pytest.raises(Exception, match="the hub has no model of that name"):
        check_model_name("nosuch/model")
    with pytest.raises(Exception, match=r"^model '\./no/such/folder': no such folder, and not a hub id"):
        check_model_name("./no/such/folder")
    (tmp_path / "empty").mkdir()
    with pytest.raises(Exception, match="is not a model folder: it has no config.json"):
        check_model_name(str(tmp_path / "empty"))
    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: pytest.fail("asked the hub"))
    check_model_name("smollm2-135m")  # offline names and folders: no hub
    check_model_name(model_folder)


def test_stage_specs_and_adapter_folders_name_the_models_they_load(monkeypatch, tmp_path):
    """Q²'s offline specs are checked by the model they name, and an adapter folder by its base model."""
    from faithkit.cli.shared_flags import check_models
    from faithkit.metrics.faithkit_checker import ADAPTER
    from faithkit.serving.models import identity

    monkeypatch.setattr(huggingface_hub, "model_info", lambda *a, **k: pytest.fail("asked the hub"))
    check_models(
        {
            "q2 --qg-model": "rules",
            "q2 --qa-model": "scoring:smollm2-135m",
            "q2 --nli-model": "checker",
            "e2e-nli --nli-model": f"checker:{ADAPTER}",
            "faithkit-checker --nli-model": str(ADAPTER),
        }
    )
    assert identity(str(ADAPTER))["name"] == str(ADAPTER.resolve())  # fingerprinted by its files' bytes
    (tmp_path / "adapter_config.json").write_text('{"base_model_name_or_path": "./no/base"}')
    shutil.copyfile(ADAPTER / "adapter_model.safetensors", tmp_path / "adapter_model.safetensors")  # weights whole
    with pytest.raises(Exception) as no_base:
        check_models({"faithkit-checker --nli-model": str(tmp_path)})
    assert str(no_base.value).startswith(
        f"faithkit-checker --nli-model (the base model of the adapter {tmp_path}) './no/base': no such folder"
    )
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(Exception) as no_name:
        check_models({"faithkit-checker --nli-model": str(tmp_path)})
    assert str(no_name.value) == (
        f"{tmp_path / 'adapter_config.json'}: base_model_name_or_path is missing (expected text); give the folder "
        "peft's save_pretrained wrote (e.g. the adapter/ of 'faithkit checker train')"
    )


def test_no_torch_before_the_error(tmp_path):
    """Every command above in one fresh process (HF_HUB_OFFLINE=1), then the modules it imported: the import graph,
    not a time, so the test holds on a busy machine."""
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "out"
    argv = [[str(word) for word in words] for words, _ in commands(rows, out).values()]
    program = f"""
import contextlib, io, sys
from faithkit.cli import main
for words in {argv!r}:
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert main(words) == 2, words
    assert err.getvalue().count("error: ") == 1 and "nosuch/model" in err.getvalue(), err.getvalue()
print(sorted({{m.partition(".")[0] for m in sys.modules}} & {{"torch", "transformers", "scipy", "accelerate"}}))
"""
    run = subprocess.run([sys.executable, "-c", program], env=subprocess_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[]\n"
    assert not out.exists()


def test_a_hub_claim_checker_missing_offline_suggests_its_checkpoint_or_the_offline_checker(
    faithkit, monkeypatch, tmp_path
):
    """The offline names are causal LMs, which a MiniCheck metric cannot read: its error does not offer them."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "checked.jsonl"
    run = faithkit("score", "--metric", "minicheck-roberta-large", "--input", rows, "--output", out)
    assert run.code == 2 and run.error_lines == [
        "error: minicheck-roberta-large --nli-model 'lytang/MiniCheck-RoBERTa-Large' is not a local folder or in the "
        "Hugging Face cache, and HF_HUB_OFFLINE is set, so the hub was not asked; give a local copy of a "
        "minicheck-roberta-large checkpoint (--nli-model FOLDER), or check claims offline with faithkit's own checker "
        "(--metric faithkit-checker), or download it where the hub is reachable "
        f"(`hf download lytang/MiniCheck-RoBERTa-Large`) and copy the cache ({OFFLINE_HINT})"
    ]
    assert not out.exists()
