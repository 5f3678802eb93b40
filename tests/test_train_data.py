"""Training rows into token ids through Dataset.map: the same ids as the prompt views give, cached by fingerprint."""

import logging
from pathlib import Path

import datasets
import pytest

from faithkit.data import Row
from faithkit.prompts import DEFAULT_TEMPLATE
from faithkit.train.data import IGNORE, encode_rows, load_rows

ROWS = [
    Row(
        id=str(i),
        document=f"Document {i} says the tower is {300 + i} metres tall. " * (1 + 8 * (i == 2)),
        history=["How tall is the tower?"],
        response=f"It is {300 + i} metres tall.",
    )
    for i in range(4)
]


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path))
    return tmp_path / "faithkit_train"


def test_ids_are_the_views_of_the_prompt_template(gpt2_tokenizer, cache):
    encoded, stats = encode_rows(
        ROWS, gpt2_tokenizer, DEFAULT_TEMPLATE, seq2seq=False, max_length=48, max_response_length=16
    )
    eos = gpt2_tokenizer.eos_token_id
    for row, example in zip(ROWS, encoded):
        response = DEFAULT_TEMPLATE.response_ids(gpt2_tokenizer, row.response) + [eos]
        context = DEFAULT_TEMPLATE.view(gpt2_tokenizer, row.document, row.history, max_tokens=48 - len(response))
        assert example == {"input_ids": context.ids + response, "labels": [IGNORE] * len(context.ids) + response}
    assert (stats.rows, stats.contexts_cut, stats.responses_cut, stats.dropped) == (4, 1, 0, 0)  # row 2 is long


def test_a_second_run_reads_the_cache_and_other_settings_tokenize_again(gpt2_tokenizer, cache, caplog):
    settings = dict(tokenizer=gpt2_tokenizer, template=DEFAULT_TEMPLATE, seq2seq=False, max_response_length=16)
    with caplog.at_level(logging.INFO, logger="faithkit.train.data"):
        first, first_stats = encode_rows(ROWS, max_length=48, **settings)
        assert not caplog.messages and len(list(cache.glob("*.arrow"))) == 1
        second, second_stats = encode_rows(ROWS, max_length=48, **settings)
        (message,) = caplog.messages
        assert message.startswith(f"4 rows: tokenized ids read from the cache ({cache}/")
        assert second.to_list() == first.to_list() and second_stats == first_stats
        caplog.clear()
        encode_rows(ROWS, max_length=40, **settings)
        encode_rows(ROWS[:3], max_length=48, **settings)
    assert not caplog.messages and len(list(cache.glob("*.arrow"))) == 3


def test_training_rows_from_parquet_and_a_saved_dataset_dict_are_the_jsonl_rows(tmp_path):
    from faithkit.train.config import DataSection

    jsonl = Path(__file__).parent / "data" / "train" / "tiny_train.jsonl"
    table = datasets.Dataset.from_json(str(jsonl))
    table.to_parquet(str(tmp_path / "train.parquet"))
    datasets.DatasetDict({"train": table, "dev": table.select(range(4))}).save_to_disk(str(tmp_path / "saved"))
    expected = load_rows(DataSection(train_file=str(jsonl), dev_file=str(jsonl)), "train")
    assert load_rows(DataSection(train_file=str(tmp_path / "train.parquet")), "train") == expected
    from_dict = DataSection(train_file=str(tmp_path / "saved"), dev_file=str(tmp_path / "saved"), dev_split="dev")
    assert load_rows(from_dict, "train") == expected and load_rows(from_dict, "dev") == expected[:4]
