"""`faithkit score --metric minimal-edit`: the contrast's features and contradicted spans in each row's record."""

import json

from faithkit.data import read_results


def test_score_writes_the_contrast_of_each_row(faithkit, model_folder, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(
            json.dumps(row) + "\n"
            for row in [
                {
                    "id": "a",
                    "document": "The Eiffel Tower is 330 metres tall.",
                    "history": "User: How tall is it?",
                    "response": "It is 150 metres tall.",
                },
                {"id": "b", "document": "Rain is wet.", "history": "", "response": "Yes."},
                {"id": "c", "document": "Rain is wet.", "history": "", "response": " "},
            ]
        )
    )
    output = tmp_path / "scores.jsonl"
    run = faithkit(
        "score", "--metric", "minimal-edit", "--model", model_folder, "--input", str(rows), "--output", str(output)
    )
    assert run.code == 0, run.err
    records = {r["id"]: r for r in read_results(output)}
    assert records["a"]["contrast_edits"] == 2 and isinstance(records["a"]["contradicted_spans"], list)
    assert records["a"]["minimal_edit"] == -max(records["a"]["contrast_logp_margin"], 0.0)
    assert records["b"]["contrast_edits"] == 0 and records["b"]["minimal_edit"] == 0.0
    assert records["c"]["error"] == "row c: field 'response' (response) is empty"
