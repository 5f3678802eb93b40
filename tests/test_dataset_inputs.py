"""Inputs held by datasets (Parquet, save_to_disk folders, hub ids) read exactly as the same rows in JSONL."""

import json

import datasets
import pytest

from faithkit.data import InputError, read_rows

RECORDS = [
    {"id": "a", "document": "D1", "history": ["h1", "h2"], "response": "R1", "extra": 1},
    {"id": "", "document": "D2", "history": [], "response": "R2", "extra": 2},  # no usable id: named by its row
    {"id": "empty", "document": "D3", "history": ["h"], "response": "  ", "extra": 3},  # a row error
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@pytest.mark.parametrize(
    "records", [RECORDS, [{k: v for k, v in r.items() if k != "id"} for r in RECORDS]], ids=["with ids", "without ids"]
)
def test_parquet_and_saved_datasets_read_as_their_jsonl(tmp_path, records):
    expected = list(read_rows(write_jsonl(tmp_path / "rows.jsonl", records)))
    dataset = datasets.Dataset.from_list(records)
    dataset.to_parquet(str(tmp_path / "rows.parquet"))
    dataset.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"test": dataset, "train": dataset.select([0])}).save_to_disk(str(tmp_path / "dict"))

    assert [row.id for row in expected] == (["a", "line-2", "empty"] if "id" in records[0] else ["1", "2", "3"])
    assert expected[2].error == f"row {expected[2].id}: field 'response' (response) is empty"
    assert list(read_rows(tmp_path / "rows.parquet")) == expected
    assert list(read_rows(tmp_path / "saved")) == expected
    assert list(read_rows(tmp_path / "dict", split="test")) == expected
    assert list(read_rows(dataset)) == expected


def test_split_is_needed_exactly_where_there_are_several(tmp_path):
    dataset = datasets.Dataset.from_list(RECORDS)
    datasets.DatasetDict({"test": dataset}).save_to_disk(str(tmp_path / "dict"))
    dataset.to_parquet(str(tmp_path / "rows.parquet"))
    with pytest.raises(InputError, match=r"dict holds the splits test; name one with --split"):
        list(read_rows(tmp_path / "dict"))
    with pytest.raises(InputError, match=r"dict holds the splits test; it has no split 'train'"):
        list(read_rows(tmp_path / "dict", split="train"))
    with pytest.raises(InputError, match=r"rows\.parquet is a single split already; drop --split"):
        list(read_rows(tmp_path / "rows.parquet", split="test"))
    with pytest.raises(InputError, match=r"rows\.jsonl: --split applies to hub datasets"):
        list(read_rows(write_jsonl(tmp_path / "rows.jsonl", RECORDS), split="test"))
    with pytest.raises(InputError, match=r"input file not found: .*missing\.parquet"):
        list(read_rows(tmp_path / "missing.parquet"))


def test_a_hub_dataset_offline_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path))
    with pytest.raises(InputError, match=r"^hub dataset McGill-NLP/FaithDial: name the split with --split"):
        list(read_rows("hf:McGill-NLP/FaithDial"))
    with pytest.raises(InputError) as error:
        list(read_rows("hf:McGill-NLP/FaithDial", split="test"))
    message = str(error.value)
    assert message.startswith("cannot load split 'test' of the hub dataset McGill-NLP/FaithDial (")
    assert message.endswith("save it with save_to_disk and pass the folder") and "\n" not in message
