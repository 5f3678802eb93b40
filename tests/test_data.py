"""Reading rows (formats, columns, bad input) and resumable result files."""

import json

import pytest

from faithkit.data import Columns, InputError, ResultWriter, Row, read_results, read_rows, reference_of, unique_ids


def test_jsonl_csv_and_tsv_give_the_same_rows(tmp_path):
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"id": "a", "document": "D", "history": ["h1", "h2"], "response": "R", "extra": 1}) + "\n"
    )
    (tmp_path / "rows.csv").write_text('id,document,history,response,extra\na,D,"[""h1"", ""h2""]",R,1\n')
    (tmp_path / "rows.tsv").write_text('id\tdocument\thistory\tresponse\textra\na\tD\t["h1", "h2"]\tR\t1\n')
    for name in ("rows.jsonl", "rows.csv", "rows.tsv"):
        (row,) = read_rows(tmp_path / name)
        assert (row.id, row.document, row.history, row.response, row.error) == ("a", "D", ["h1", "h2"], "R", None)
        assert str(row.extras["extra"]) == "1"


def test_begin_layout_is_recognised(data_dir):
    rows = list(read_rows(data_dir / "begin" / "begin_dev_wow.tsv"))
    assert len(rows) == 430  # the README's row count: no row lost to quoting
    assert rows[0].document.startswith("originally an industrial pigment supply company")
    assert rows[0].history == [
        "strange name, but it makes sense that they would start with the darkest color. "
        "it probably has the most applications."
    ]
    assert rows[0].extras["begin_label"] == "Fully attributable"
    assert sum(r.extras["begin_label"] == "Fully attributable" for r in rows) == 180


def test_q2_wow_csv_is_read(data_dir):
    rows = list(read_rows(data_dir / "q2_wow" / "dodeca_consistent.csv"))
    assert len(rows) == 150 and rows[0].response == "i love gardening as well . it is considered to be relaxing ."


def test_missing_column_names_the_field_and_the_fix(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"document": "D", "answer": "R"}) + "\n")
    with pytest.raises(InputError, match=r"no column for 'response'.*Name it with Columns\(response=\.\.\.\)"):
        list(read_rows(path))
    with pytest.raises(InputError, match=r"column 'reply' \(given for response\) not found"):
        list(read_rows(path, Columns(response="reply")))
    (row,) = read_rows(path, Columns(response="answer"))
    assert row.response == "R" and row.history == []


def test_bad_rows_carry_errors_and_are_not_dropped(tmp_path):
    path = tmp_path / "rows.jsonl"
    lines = [
        json.dumps({"id": "ok", "document": "D", "history": "h", "response": "R"}).encode(),
        json.dumps({"id": "empty", "document": "D", "history": "h", "response": "  "}).encode(),
        b'{"id": "latin1", "document": "caf\xe9", "history": "h", "response": "R"}',
        b"{not json",
        json.dumps({"id": "nodoc", "document": "", "history": "h", "response": "R"}).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    rows = list(read_rows(path))
    # the file has an id column, so a row without one is named by its line, never by a bare number
    assert [r.id for r in rows] == ["ok", "empty", "line-3", "line-4", "nodoc"]
    assert rows[0].error is None
    assert rows[1].error == "row empty: field 'response' (response) is empty"
    assert rows[2].error == "line 3 is not valid UTF-8"
    assert rows[3].error.startswith("line 4 is not valid JSON")
    assert rows[4].error == "row nodoc: field 'document' (document) is empty"


def test_invalid_utf8_in_a_csv_field_names_row_and_field(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_bytes(b"document,history,response\nD,h,R\nD,h,caf\xe9\n")
    rows = list(read_rows(path))
    assert rows[0].error is None
    assert rows[1].error.startswith("row 2: field 'response' is not valid UTF-8")  # id: its data row number


def test_duplicate_ids_are_refused(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": 1, "document": "D", "response": "R"}) + "\n" for _ in range(2)))
    with pytest.raises(InputError, match="^row id '1' appears twice, on lines 1 and 2; ids must be unique"):
        unique_ids(list(read_rows(path, Columns(required=("document", "response")))))
    path = tmp_path / "rows.csv"  # lines of the file: the header is line 1, a quoted newline takes two
    path.write_text('id,document,response\na,D,"R\nmore"\nb,D,R\na,D,R\n')
    with pytest.raises(InputError, match="^row id 'a' appears twice, on lines 2 and 5; ids must be unique"):
        unique_ids(list(read_rows(path, Columns(required=("document", "response")))))


def test_writer_resumes_and_drops_a_half_written_line(tmp_path):
    path = tmp_path / "out.jsonl"
    with ResultWriter(path) as writer:
        writer.write({"id": "a", "score": 1.0})
        writer.write({"id": "b", "score": 2.0})
    with open(path, "a") as handle:
        handle.write('{"id": "c", "sco')  # the process died mid-write
    writer = ResultWriter(path)
    assert writer.done("a") and writer.done("b") and not writer.done("c")
    writer.write({"id": "c", "score": 3.0})
    writer.close()
    assert [r["id"] for r in read_results(path)] == ["a", "b", "c"]
    with ResultWriter(path, resume=False) as fresh:
        assert not fresh.done("a")
    assert read_results(path) == []


def test_the_lock_file_lives_while_the_writer_does_and_a_killed_runs_lock_is_taken(tmp_path):
    from faithkit.errors import OutputError

    path, lock = tmp_path / "out.jsonl", tmp_path / "out.jsonl.lock"
    lock.touch()  # left by a run killed with -9: the system dropped its lock, the file stayed
    with ResultWriter(path) as writer:
        writer.write({"id": "a"})
        assert lock.exists()
    assert not lock.exists() and read_results(path) == [{"id": "a"}]
    with pytest.raises(
        OutputError, match="no record of the job"
    ):  # a refusal after locking takes its lock file away too
        ResultWriter(path, fingerprint={"metric": "other"})
    assert not lock.exists()


def test_unwritable_text_in_any_field_is_a_row_error_naming_it(tmp_path):
    # every field reaches the output, so a lone surrogate in an extra field or the id must not crash the writer
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"id": "a", "document": "D", "response": "R", "topic": ["ok", "x\\udc00"]}\n'
        '{"id": "b\\ud800", "document": "D", "response": "R"}\n'
        '{"id": "c", "document": "D", "response": "R", "meta": {"k\\ud800": 1}}\n'
        '{"id": "d", "document": "D", "response": "R \\ud83d\\ude00"}\n',
        encoding="utf-8",
    )
    rows = list(read_rows(path))
    assert [r.id for r in rows] == ["a", "line-2", "c", "d"]
    assert rows[0].error.startswith("row a: field 'topic' is not valid UTF-8 text")
    assert rows[1].error.startswith("row line-2: field 'id' is not valid UTF-8 text")
    assert rows[2].error.startswith("row c: field 'meta' is not valid UTF-8 text")
    assert rows[3].error is None and rows[3].response == "R \U0001f600"  # a surrogate pair is one real character


def test_the_reference_is_a_gold_or_reference_column_else_the_response():
    assert reference_of(Row("1", response="said", extras={"reference": "ref", "gold": "gold"})) == "gold"
    assert reference_of(Row("1", response="said", extras={"reference": "ref", "gold": ""})) == "ref"
    assert reference_of(Row("1", response="said", extras={"other": "x"})) == "said"
    assert reference_of(Row("1")) is None
