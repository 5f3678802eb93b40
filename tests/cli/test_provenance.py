"""Every output says what made it: the same provenance record (faithkit/provenance.py) in the sweep's printed table,
report.html, sweep.csv's sidecar and best.json, in meta-eval labels' results.json and printed table, and beside
generate's and rerank's outputs."""

import hashlib
import json
import re
from html import unescape
from pathlib import Path

from faithkit import __version__, provenance
from faithkit.sweep import load_config

from tests.test_checker import checker_folders  # noqa: F401  (a fixture)

from .helpers import write_jsonl

ROWS = [
    {"id": "a", "document": "Red apples grow on tall trees.", "history": ["Tell me about apples."], "gold": "Red."},
    {"id": "b", "document": "Pears ripen after picking.", "history": ["And pears?"], "gold": "They ripen late."},
]


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_record(record: dict, command: str, roles: dict, data: list, options: dict) -> None:
    """``record`` is a provenance record of ``faithkit COMMAND``: its models (role -> name; a folder by its resolved
    path and a hash of its files), data files with their sha256, and at least ``options``."""
    assert list(record) == list(provenance.FIELDS)
    assert shape(record) == shape(provenance.record({}))  # the same block, whichever command wrote it
    assert record["faithkit"] == __version__
    assert record["command"].startswith(f"faithkit {command} ")
    assert {role: model["name"] for role, model in record["models"].items()} == roles
    assert all(len(model.get("hash") or "") == 16 for model in record["models"].values())
    assert record["data"] == [{"path": str(path), "sha256": sha256(path)} for path in data]
    assert record["options"].items() >= options.items()


def shape(record: dict) -> dict:
    """Each field's type, and the keys of the versions and the machine."""
    return {
        key: sorted(value) if key in ("versions", "machine") else type(value).__name__ for key, value in record.items()
    }


def shown(record: dict, text: str) -> None:
    """A printed table or a page shows the record's header lines."""
    for line in provenance.header_lines(record):
        assert line in text, line


def test_the_record_names_models_data_options_version_and_command(model_folder, tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    provenance.note_invocation(["score", "--input", str(rows)], {"metric": "lexical"})
    record = provenance.record({"judge": model_folder, "unused": None}, rows)
    folder = str(Path(model_folder).resolve())
    check_record(record, "score", {"judge": folder}, [rows], {"metric": "lexical"})
    assert record["command"] == f"faithkit score --input {rows}"
    lines = provenance.header_lines(record)
    assert lines[0] == f"faithkit {__version__}: faithkit score --input {rows}"
    assert lines[1].startswith(f"models: judge {folder} (hash ") and lines[2].startswith(f"data: {rows} (sha256 ")
    assert lines[3] == "options differing from defaults: metric=lexical"
    assert (
        unescape(re.sub(r"<[^>]+>", "\n", provenance.html(record))).split()
        == "Provenance".split() + " ".join(lines).split()
    )
    sidecar = provenance.write_sidecar(tmp_path / "out.csv", record)
    assert sidecar.name == "out.csv.provenance.json" and json.loads(sidecar.read_text()) == {"provenance": record}


def test_a_sweeps_settings_off_their_defaults_from_file_and_flags(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sweep.yaml").write_text("top_p: [0.8]\nmax_new_tokens: 7\n")
    config = load_config("sweep.yaml", {"generator": "G", "scoring_model": None, "input": "rows.jsonl", "out": "o"})
    assert provenance.changed_fields(config) == {
        "generator": "G",
        "input": "rows.jsonl",
        "out": "o",
        "top_p": (0.8,),
        "generation": {"max_new_tokens": 7},  # num_beams 4 is the sweep's own default: not listed
    }


def test_sweep_outputs_say_what_made_them(faithkit, model_folder, tmp_path):
    rows, out = write_jsonl(tmp_path / "rows.jsonl", ROWS), tmp_path / "sweep"
    run = faithkit(
        "sweep",
        *("--generator", model_folder, "--scoring-model", model_folder, "--input", rows, "--out", out),
        *("--alpha", "0.5", "--top-p", "1", "--max-new-tokens", "3", "--metrics", "pmi-faith,lexical"),
    )
    assert run.code == 0, run.err
    folder = str(Path(model_folder).resolve())
    best = json.loads((out / "best.json").read_text())
    record = best["provenance"]
    options = {"alpha": [0.5], "top_p": [1.0], "generation": {"max_new_tokens": 3}, "out": str(out)}
    check_record(record, "sweep", {"generator": folder, "scoring_model": folder}, [rows], options)
    assert list(record["metric_options"]) == ["pmi-faith", "lexical"]
    assert record["metric_options"]["pmi-faith"]["normalize"] == "mean"  # defaults included
    assert json.loads((out / "sweep.csv.provenance.json").read_text()) == {"provenance": record}
    assert run.out.startswith(f"faithkit {__version__}: faithkit sweep ")
    shown(record, run.out)
    page = unescape((out / "report.html").read_text())
    assert '<section class="provenance">' in page
    shown(record, page)


def test_meta_eval_labels_results_and_table_say_what_made_them(faithkit, model_folder, tmp_path):
    rows = write_jsonl(
        tmp_path / "labelled.jsonl",
        [
            {"id": str(n), "document": "Red apples grow on trees.", "response": text, "verdict": verdict}
            for n, (text, verdict) in enumerate(
                [("red apples grow", "yes"), ("blue cars", "no"), ("apples", "yes"), ("trees fly", "no")]
            )
        ],
    )
    out = tmp_path / "out"
    run = faithkit(
        "meta-eval",
        "labels",
        *("--input", rows, "--label-column", "verdict", "--positive", "yes", "--metrics", "overlap-f1,pmi-faith"),
        *("--model", model_folder, "--resamples", "50", "--out", out),
    )
    assert run.code == 0, run.err
    record = json.loads((out / "results.json").read_text())["provenance"]
    metrics = ["overlap-f1", "pmi-faith"]
    options = {"label_column": "verdict", "positive": "yes", "metrics": metrics, "resamples": 50, "seed": 0}
    folder = str(Path(model_folder).resolve())
    check_record(record, "meta-eval labels", {"pmi-faith --model": folder}, [rows], options)
    assert list(record["metric_options"]) == metrics
    assert record["metric_options"]["pmi-faith"]["model"] == model_folder
    assert record["metric_options"]["pmi-faith"]["normalize"] == "mean"  # defaults included
    shown(record, run.out)


def test_generate_score_and_rerank_outputs_have_their_record_beside_them(faithkit, model_folder, tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    candidates = write_jsonl(
        tmp_path / "candidates.jsonl", [{"id": "a", "responses": ["Red.", "Apples"]}, {"id": "b", "responses": ["P"]}]
    )
    folder = str(Path(model_folder).resolve())
    generated = tmp_path / "generated.jsonl"
    run = faithkit(
        "generate",
        *("--model", model_folder, "--input", rows, "--output", generated),
        *("--strategy", "plain", "--max-new-tokens", "3"),
    )
    assert run.code == 0, run.err
    record = json.loads((tmp_path / "generated.jsonl.provenance.json").read_text())["provenance"]
    check_record(record, "generate", {"generator": folder}, [rows], {"strategy": "plain", "max_new_tokens": 3})

    scored = tmp_path / "scored.jsonl"
    run = faithkit("score", "--metric", "pmi-faith", "--model", model_folder, "--input", generated, "--output", scored)
    assert run.code == 0, run.err
    record = json.loads((tmp_path / "scored.jsonl.provenance.json").read_text())["provenance"]
    check_record(record, "score", {"pmi-faith --model": folder}, [generated], {"model": model_folder})

    reranked = tmp_path / "reranked.jsonl"
    run = faithkit(
        "rerank",
        *("--model", model_folder, "--input", rows, "--candidates", candidates, "--output", reranked),
        *("--max-new-tokens", "3"),
    )
    assert run.code == 0, run.err
    record = json.loads((tmp_path / "reranked.jsonl.provenance.json").read_text())["provenance"]
    roles = {"generator": folder, "judge (pmi-faith under the generator)": folder}
    check_record(record, "rerank", roles, [rows, candidates], {"max_new_tokens": 3})


def test_meta_eval_begin_results_have_their_record_beside_them(faithkit, model_folder, tmp_path):
    header = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
    dev = tmp_path / "dev.tsv"
    dev.write_text(
        header
        + "t5\twow\tRed apples grow on trees.\tDo you like apples?\tred apples grow\tFully attributable\n"
        + "t5\twow\tRed apples grow on trees.\tDo you like apples?\tblue cars\tNot fully attributable\n"
    )
    out = tmp_path / "out"
    run = faithkit("meta-eval", "begin", "--metric", "pmi-faith", "--model", model_folder, "--dev", dev, "--out", out)
    assert run.code == 0, run.err
    record = json.loads((out / "results.json.provenance.json").read_text())["provenance"]
    folder = str(Path(model_folder).resolve())
    check_record(record, "meta-eval begin", {"pmi-faith --model": folder}, [dev], {"model": model_folder})


def test_the_record_names_library_versions_the_checkout_the_run_s_times_and_the_machine():
    import os
    import subprocess
    from datetime import datetime

    import torch
    import transformers

    provenance.note_invocation(["score"], {})
    record = provenance.record({})
    versions, machine = record["versions"], record["machine"]
    assert versions["faithkit"] == __version__ and versions["torch"] == torch.__version__
    assert versions["transformers"] == transformers.__version__
    checkout = Path(provenance.__file__).resolve().parents[1]
    head = subprocess.run(["git", "-C", checkout, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert versions["faithkit_git"].removesuffix("-dirty") == head and len(head) == 40
    started, finished = (datetime.fromisoformat(record[key]) for key in ("started", "finished"))
    assert started <= finished and started.tzinfo is not None
    assert machine["cpu_count"] == os.cpu_count() and machine["gpus"] == [] and machine["cpu"]
    line = provenance.header_lines(record)[-1]
    assert line.startswith(f"run: {record['started']} to {record['finished']} on {os.cpu_count()} CPU cores (")
    assert line.endswith(
        f"no GPU; torch {torch.__version__}, transformers {transformers.__version__}; faithkit git {head[:12]}"
    )


def test_a_checker_score_names_its_adapter_and_the_base_model_with_their_hashes_and_its_options(
    faithkit, checker_folders, tmp_path
):
    base, adapter = checker_folders
    rows = write_jsonl(tmp_path / "rows.jsonl", [{"id": "a", "document": "Apples grow.", "response": "They grow."}])
    out = tmp_path / "out.jsonl"
    run = faithkit("score", "--metric", "faithkit-checker", "--nli-model", adapter, "--input", rows, "--output", out)
    assert run.code == 0, run.err
    record = json.loads((tmp_path / "out.jsonl.provenance.json").read_text())["provenance"]
    roles = {"faithkit-checker --nli-model": str(adapter.resolve()), "faithkit-checker --nli-model base": str(base)}
    check_record(record, "score", roles, [rows], {"nli_model": str(adapter)})
    assert record["metric_options"] == {
        "faithkit-checker": {
            "nli_model": str(adapter),
            "window": None,
            "stride": None,
            "max_windows": 16,
            "batch_size": 8,
            "device": None,
            "dtype": None,
        }
    }


def test_every_metric_names_a_model_it_reads_by_default():
    """The models a metric falls back to are named as surely as those given: the registry walked."""
    from faithkit.metrics.faithkit_checker import ADAPTER, ADAPTERS
    from faithkit.metrics.model_roles import models_read
    from faithkit.metrics.registry import METRICS

    no_model = {name for name, spec in METRICS.items() if not spec.runs_on_device} | {"llm-judge"}
    for name in METRICS:
        read = models_read(name, {})
        assert bool(read) == (name not in no_model), name
        assert all(role.startswith(f"{name} --") for role in read), read
    assert models_read("faithkit-checker", {}) == {
        "faithkit-checker --nli-model": str(ADAPTER),
        "faithkit-checker --nli-model base": "gemma3-270m",
    }
    assert models_read("faithkit-checker-smollm2", {}) == {
        "faithkit-checker-smollm2 --nli-model": str(ADAPTERS["smollm2"]),
        "faithkit-checker-smollm2 --nli-model base": "smollm2-135m",
    }
    assert models_read("q2", {"preset": "offline"}) == {
        "q2 --qa-model": "smollm2-135m",
        "q2 --nli-model": str(ADAPTER),
        "q2 --nli-model base": "gemma3-270m",
    }
    assert models_read("minicheck-roberta-large", {}) == {
        "minicheck-roberta-large --nli-model": "lytang/MiniCheck-RoBERTa-Large"
    }
    assert models_read("faith-judge", {}) == {"faith-judge --model": "smollm2-135m"}
