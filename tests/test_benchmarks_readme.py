"""benchmarks/README.md indexes every script of benchmarks/ (what it measures, how long it takes, which docs it
feeds), and no benchmark writes into the package."""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
ROW = re.compile(r"^\| `([^`]+\.py)` \|(.*)\|\s*$")


def readme_rows(text: str) -> dict[str, list[str]]:
    """The index table's rows: script name -> its other cells (what it measures, how long, the docs it feeds)."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"{match.group(1)} has two lines in benchmarks/README.md"
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return rows


def test_every_script_in_benchmarks_has_one_line_in_the_readme_and_every_line_a_script():
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    rows = readme_rows((BENCHMARKS / "README.md").read_text(encoding="utf-8"))
    assert sorted(scripts - rows.keys()) == [], "scripts without a line in benchmarks/README.md"
    assert sorted(rows.keys() - scripts) == [], "lines of benchmarks/README.md naming no script"
    for name, cells in rows.items():
        assert len(cells) == 3 and all(cells), f"{name}: say what it measures, how long it takes, which docs it feeds"


def test_a_readme_line_names_docs_pages_that_exist():
    rows = readme_rows((BENCHMARKS / "README.md").read_text(encoding="utf-8"))
    named = {page for cells in rows.values() for page in re.findall(r"\b([\w-]+\.md)\b", cells[2])}
    assert named, "the index names no docs page"
    assert sorted(page for page in named if not (ROOT / "docs" / page).is_file()) == []


def test_the_index_parser_sees_a_missing_script():
    text = "| script | a | b | c |\n|---|---|---|---|\n| `one.py` | x | y | z |\n"
    assert readme_rows(text) == {"one.py": ["x", "y", "z"]}
    assert readme_rows(text.replace("`one.py`", "one.py")) == {}


def test_no_command_in_the_docs_or_a_benchmark_writes_into_the_package():
    output = re.compile(r"--(?:write|out|output|save|markdown|features|keep|data)[ =]+(?:\./)?faithkit/")
    texts = [*BENCHMARKS.glob("*.py"), BENCHMARKS / "README.md", *(ROOT / "docs").glob("*.md")]
    found = [f"{path.relative_to(ROOT)}: {line.strip()}" for path in texts for line in path.read_text().splitlines()]
    assert [line for line in found if output.search(line)] == []


def run_main(script: str, argv: list[str], monkeypatch) -> SystemExit:
    spec = importlib.util.spec_from_file_location(script.removesuffix(".py"), BENCHMARKS / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [script, *argv])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    return stopped.value


@pytest.mark.parametrize(
    "script, argv",
    [
        ("judge_fit.py", ["runs/features", "--write", "faithkit/metrics/judge_weights.json"]),
        ("checker_reading_fit.py", ["rated.jsonl", "scored.jsonl", "--write", "faithkit/metrics/checker_adapter"]),
    ],
)
def test_a_fit_refuses_to_write_into_the_package_before_reading_anything(script, argv, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert run_main(script, argv, monkeypatch).code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error.startswith(f"{script}: error: --write faithkit/metrics/")
    assert "is inside the package; write" in error and "under runs/" in error
