"""benchmarks/gpu_check.py in its CPU form (``--device cpu --tiny``): every decode timed, both checks passed."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "gpu_check.py"


def test_the_gpu_check_runs_on_cpu_with_tiny_shapes(capsys):
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)
    code = gpu_check.main(["--device", "cpu", "--tiny"])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert code == 0 and report["passed"]
    decodes = report["decodes"]
    assert [(d["model"], d["batch"], d["search"], d["strategy"]) for d in decodes] == [
        (model, batch, search, strategy)
        for model in ("bart-large", "llama-1b")
        for batch in (2,)
        for search in ("greedy", "beam")
        for strategy in ("plain", "pmi", "cad", "adacad")
    ]
    assert all(d["tokens_per_s"] > 0 for d in decodes)
    assert all(d["ratio_to_plain"] == 1.0 for d in decodes if d["strategy"] == "plain")
    assert report["scorer"]["responses"] == 64 and report["scorer"]["max_abs_difference"] < 1e-4
    bf16 = report["bf16_vs_fp32"]
    assert bf16["tokens"] == 64 and bf16["same_tokens"] == (bf16["agreement"] == 1.0)
    assert all(d["fp32_margin"] <= 2 * d["bf16_error"] for d in bf16["first_differences"])
