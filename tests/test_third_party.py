"""The libraries' messages a user cannot act on (faithkit/serving/third_party.py): gone where faithkit makes the call, and
nothing else hidden with them."""

import logging
import warnings

import pytest

from faithkit.checker.training import CheckerTraining, lora_model, save_adapter
from faithkit.metrics.faithkit_checker import load_checker
from faithkit.serving.third_party import LOG_RECORDS, WARNINGS, hidden_warnings, quiet_loggers

from tests.test_checker import checker_folders  # noqa: F401  (a fixture)


def _warnings_of(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def test_loading_the_checker_adapter_warns_nothing(checker_folders):  # noqa: F811
    _, adapter = checker_folders
    assert _warnings_of(lambda: load_checker(str(adapter), device="cpu")) == []


@pytest.mark.parametrize("checkpointing", [False, True])
def test_wrapping_the_base_model_for_checker_training_warns_nothing(checker_folders, checkpointing):  # noqa: F811
    """'faithkit checker train' wraps its base model as peft does for the loaded checker: the same FutureWarning
    once came from every training run."""
    base, _ = checker_folders
    training = CheckerTraining(model=str(base), layers=1, gradient_checkpointing=checkpointing)
    wrapped: list = []
    assert _warnings_of(lambda: wrapped.append(lora_model(training))) == []
    assert wrapped[0][0].peft_config["default"].base_model_name_or_path == str(base)


def test_the_hidden_warning_is_what_transformers_says_and_only_it_is_hidden():
    def both():
        with hidden_warnings():
            warnings.warn(
                "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use `is_activation_checkpointing`",
                FutureWarning,
                stacklevel=1,
            )
            warnings.warn(
                "`is_gradient_checkpointing` is deprecated", UserWarning, stacklevel=1
            )  # another category: shown
            warnings.warn("something else", FutureWarning, stacklevel=1)

    assert _warnings_of(both) == [
        "UserWarning: `is_gradient_checkpointing` is deprecated",
        "FutureWarning: something else",
    ]
    assert [entry.category for entry in WARNINGS] == [FutureWarning]


def test_a_saved_adapter_on_an_offline_base_name_asks_no_hub_and_warns_nothing(tiny_llama, tmp_path):
    """As 'faithkit checker train' saves one: the base is named by its offline name, which is no folder and no hub id,
    so peft's embedding check (save_embedding_layers="auto") would look it up and warn twice."""
    from peft import LoraConfig, get_peft_model

    model, tokenizer = tiny_llama
    adapted = get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"]))
    adapted.peft_config["default"].base_model_name_or_path = "smollm2-135m"
    try:
        assert _warnings_of(lambda: save_adapter(adapted, tokenizer, tmp_path / "adapter")) == []
    finally:
        adapted.unload()
    assert (tmp_path / "adapter" / "adapter_model.safetensors").stat().st_size > 0
    assert '"base_model_name_or_path": "smollm2-135m"' in (tmp_path / "adapter" / "adapter_config.json").read_text()


def test_accelerates_defaults_notice_is_dropped_and_its_other_records_kept(caplog):
    quiet_loggers()
    quiet_loggers()  # once is enough; twice adds nothing
    logger = logging.getLogger("accelerate.commands.launch")
    assert len(logger.filters) == 1 and list(LOG_RECORDS) == ["accelerate.commands.launch"]
    with caplog.at_level(logging.WARNING, logger="accelerate.commands.launch"):
        logger.warning(
            "The following values were not passed to `accelerate launch` and had defaults used instead:\n"
            "\t`--num_processes` was set to a value of `1`"
        )
        logger.warning("You need to manually pass in `--num_processes` using this config yaml.")
    assert [record.getMessage() for record in caplog.records] == [
        "You need to manually pass in `--num_processes` using this config yaml."
    ]


def test_loading_a_model_draws_no_loading_weights_bar_and_transformers_other_bars_stay(model_folder, capsys):
    import transformers
    from transformers.utils import logging as transformers_logging

    from faithkit.serving import models
    from faithkit.serving.third_party import hidden_progress_bars

    was_enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()
    try:
        transformers.AutoModelForCausalLM.from_pretrained(model_folder)  # transformers alone draws it
        assert "Loading weights" in capsys.readouterr().err
        models.load(model_folder, device="cpu")
        assert "Loading weights" not in capsys.readouterr().err
        with hidden_progress_bars():
            for _ in transformers_logging.tqdm(range(2), desc="Downloading"):
                pass
        assert "Downloading" in capsys.readouterr().err
    finally:
        if not was_enabled:
            transformers_logging.disable_progress_bar()
