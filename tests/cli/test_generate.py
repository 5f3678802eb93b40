"""`faithkit generate` end to end with a saved tiny GPT-2: responses equal the library's, records keep their inputs."""

import pytest

from faithkit.data import read_results
from faithkit.decoding import generate
from faithkit.prompts import DEFAULT_TEMPLATE

from .helpers import write_jsonl

DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and was finished in 1889.",
    "Gardening is considered by many people to be a relaxing activity.",
    "Jazz originated in New Orleans in the late 19th century.",
]
HISTORIES = [
    ["How tall is the Eiffel Tower?"],
    ["I just started gardening.", "Nice! Do you like it?", "Yes, a lot."],
    [],
]


@pytest.fixture()
def rows_file(tmp_path):
    rows = [{"id": f"r{i}", "knowledge": d, "history": h} for i, (d, h) in enumerate(zip(DOCUMENTS, HISTORIES))]
    rows.insert(1, {"id": "bad", "knowledge": " ", "history": ["hi"]})
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_generates_resumes_and_reports_bad_rows(faithkit, model_folder, rows_file, tmp_path, tiny_gpt2, gpt2_tokenizer):
    out = tmp_path / "out.jsonl"
    argv = [
        "generate",
        "--model",
        model_folder,
        "--input",
        rows_file,
        "--output",
        out,
        "--max-new-tokens",
        "4",
        "--batch-size",
        "2",
    ]
    run = faithkit(*argv)
    assert run.code == 0 and "3 generated, 0 already done, 1 errors" in run.err
    full = read_results(out)
    assert [r["id"] for r in full] == ["r0", "bad", "r1", "r2"]  # input order, the bad row in its place
    assert full[1]["error"] == "row bad: field 'knowledge' (document) is empty"
    expected = generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, template=DEFAULT_TEMPLATE, max_new_tokens=4)
    assert [r["response"] for r in full if r["id"] != "bad"] == expected
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out")) == [
        "out.jsonl",
        "out.jsonl.meta.json",
        "out.jsonl.provenance.json",
    ]  # the finished writer took its lock file away

    # a crash after two records, mid-way through the third: the rerun completes without duplicates
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n" + lines[2][:10])
    run = faithkit(*argv)
    assert run.code == 0 and "2 generated, 1 already done, 1 errors" in run.err  # the error record is retried
    assert read_results(out) == full


def test_sampling_gives_each_row_its_responses_whatever_its_chunk(faithkit, model_folder, rows_file, tmp_path):
    argv = [
        "--model",
        model_folder,
        "--input",
        rows_file,
        "--max-new-tokens",
        "4",
        "--do-sample",
        "--seed",
        "3",
        "--num-return-sequences",
        "2",
    ]
    assert faithkit("generate", *argv, "--output", tmp_path / "a.jsonl").code == 0
    records = read_results(tmp_path / "a.jsonl")
    assert [len(r.get("responses", [])) for r in records] == [2, 0, 2, 2]
    # each row draws from its own generator (seed and id): one row at a time gives the same responses
    assert faithkit("generate", *argv, "--output", tmp_path / "b.jsonl", "--chunk-size", "1").code == 0
    assert read_results(tmp_path / "b.jsonl") == records
    # killed after two rows (the third half-written), then rerun: the file an uninterrupted run writes
    resumed = tmp_path / "c.jsonl"
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    resumed.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15])
    (tmp_path / "c.jsonl.meta.json").write_text((tmp_path / "a.jsonl.meta.json").read_text())
    assert faithkit("generate", *argv, "--output", resumed).code == 0
    assert resumed.read_text() == (tmp_path / "a.jsonl").read_text()


def test_records_keep_id_document_history_and_gold_beside_the_response(
    faithkit, model_folder, tmp_path, tiny_gpt2, gpt2_tokenizer
):
    rows = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {
                "id": "with-gold",
                "document": DOCUMENTS[0],
                "history": HISTORIES[0],
                "response": "the old reply",
                "gold": "It is 330 metres tall.",
            },
            {"id": "reply-as-gold", "document": DOCUMENTS[1], "history": HISTORIES[1], "response": "I love it too."},
            {"id": "no-reference", "document": DOCUMENTS[2], "history": []},
        ],
    )
    out = tmp_path / "out.jsonl"
    assert (
        faithkit("generate", "--model", model_folder, "--input", rows, "--output", out, "--max-new-tokens", "3").code
        == 0
    )
    with_gold, reply_as_gold, no_reference = read_results(out)
    assert with_gold["id"] == "with-gold" and with_gold["document"] == DOCUMENTS[0]
    assert with_gold["history"] == HISTORIES[0] and with_gold["gold"] == "It is 330 metres tall."
    assert "extras" not in with_gold  # the gold column once, as the record's gold
    # the input's response column is the reference when there is no gold column; the new response replaces it
    assert reply_as_gold["gold"] == "I love it too." and reply_as_gold["history"] == HISTORIES[1]
    assert no_reference["gold"] is None and no_reference["history"] == []
    expected = generate(
        tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES[:2] + [[]], template=DEFAULT_TEMPLATE, max_new_tokens=3
    )
    assert [r["response"] for r in (with_gold, reply_as_gold, no_reference)] == expected


def test_a_setting_no_row_can_meet_stops_the_job_with_one_error(faithkit, model_folder, rows_file, tmp_path):
    output = tmp_path / "out.jsonl"
    run = faithkit(
        "generate", "--model", model_folder, "--input", rows_file, "--output", output, "--max-new-tokens", "300"
    )
    assert run.code == 2
    assert "error: --max-new-tokens 300 leaves no room for a context in the model's 256 positions" in run.err
    assert [r["id"] for r in read_results(output)] == ["bad"]  # only the row that is bad on its own


def test_a_cut_context_is_reported_in_its_row_s_record(faithkit, model_folder, tmp_path, gpt2_tokenizer):
    """Over 8 characters a token of room (40 tokens: 320 characters), the document keeps its last 320 characters
    before it is tokenised, then its end within 40 tokens; the record says how long it was and what went."""
    document = " ".join(f"w{i}" for i in range(200))
    rows = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"id": "long", "document": document, "history": ["Tell me more."]},
            {"id": "short", "document": "Paris is in France.", "history": ["Where is Paris?"]},
        ],
    )
    out = tmp_path / "out.jsonl"
    argv = ["--input", rows, "--output", out, "--max-new-tokens", "3", "--max-context-tokens", "40"]
    run = faithkit("generate", "--model", model_folder, *argv)
    assert run.code == 0
    long, short = read_results(out)
    context = DEFAULT_TEMPLATE.context(gpt2_tokenizer, document, ["Tell me more."], max_tokens=40)
    assert context.truncated_chars == len(document) - 320
    assert {key: long[key] for key in ("document_chars", "truncated_chars", "truncated_tokens", "context_tokens")} == {
        "document_chars": len(document),
        "truncated_chars": len(document) - 320,
        "truncated_tokens": context.truncated_tokens,
        "context_tokens": len(context.ids),
    }
    assert not {"document_chars", "truncated_chars", "truncated_tokens", "context_tokens"} & set(short)
    assert long["truncated_from"] == "start" and "truncated_from" not in short
    assert (
        f"warning: row long: context cut by {len(document) - 320} characters before tokenising and {context.truncated_tokens} tokens "
        "from the document's start to fit the model" in run.err
    )
