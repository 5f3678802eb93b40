"""Every code block of README.md and docs/*.md runs, so that none can drift from the code; the docs site builds
with ``mkdocs build --strict``, every page renders in headless Chromium and every internal link resolves.

How a page's code blocks are run (docs/contributing.md tells writers the same):

* A block runs in a scratch folder that holds the checkout's ``examples/``, ``configs/``, ``tests/`` and ``train.py``
  and ``../shared/data`` beside it (the benchmark data), nothing else: what a fresh clone has, so every command runs
  as written (``examples/rows.jsonl``, the offline models).
* ``python`` blocks of one page run in order in one namespace (one test per page). A line ``EXPRESSION  # => VALUE``
  also checks the expression's value: each number to the digits VALUE shows, anything else by its ``repr``.
* ``bash`` blocks run command by command (``faithkit ...`` in this process, ``faithkit launch`` and anything else in
  bash, ``faithkit`` being ``python -m faithkit`` there); a command must succeed, unless
  the line after it reads ``# prints: TEXT``: then its last line of output must be TEXT, whatever its status.
* ``yaml`` blocks are sweep configs (a ``strategies`` key) loaded by :func:`faithkit.sweep.load_config`, or must
  at least parse.
* ``<!-- not run: REASON -->`` on the line before a block skips it (it needs the hub, hours or a human); the
  reason is required and the skipped blocks are counted in the test's report.

Bash blocks (subprocesses), the browser and blocks that name a real offline model (SmolLM2, Gemma, Q²'s offline
preset; these in the real models' xdist group) are ``slow``.
"""

import ast
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.cli.helpers import run_main, subprocess_env
from tests.conftest import DATA
from tests.test_annotate_browser import browser  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?:<!-- not run: (?P<reason>.*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)\n```$", re.DOTALL | re.MULTILINE
)
RUNS = {"python", "bash", "yaml"}
FIGURES = {"text"}  # diagrams and output: not code
REAL_MODELS = re.compile(r"smollm2-135m|gemma3-270m|preset=\"offline\"|--preset offline")
EXPECT = re.compile(r"^(?P<indent>\s*)(?P<expression>\S.*?)\s+# => (?P<value>.+)$")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


@dataclass(frozen=True)
class Block:
    page: Path
    number: int  # 1-based, in the page's order
    lang: str
    code: str
    not_run: str | None  # the reason, for a block the tests skip

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}#{self.number}"


def read_blocks(page: Path) -> list[Block]:
    return [
        Block(page, number, match["lang"], match["code"], match["reason"])
        for number, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8")), 1)
    ]


BLOCKS = [block for page in PAGES for block in read_blocks(page)]


def slow_if_real(code: str):
    return [pytest.mark.slow, pytest.mark.xdist_group("real-models")] if REAL_MODELS.search(code) else []


def test_every_block_runs_or_says_why(record_property):
    """Each block has a language the tests run, and a block they skip says why; the counts go to the report."""
    assert BLOCKS, "no code blocks found"
    unknown = [block.name for block in BLOCKS if block.lang not in RUNS | FIGURES]
    assert not unknown, f"code blocks of no runnable language (python, bash, yaml; text for figures): {unknown}"
    assert all(block.not_run.strip() for block in BLOCKS if block.not_run is not None)
    code = [block for block in BLOCKS if block.lang in RUNS]
    not_run = [block.name for block in code if block.not_run is not None]
    record_property("code_blocks", len(code))
    record_property("not_run", len(not_run))
    print(f"{len(code)} code blocks, {len(not_run)} not run: {', '.join(not_run)}")


def test_a_block_says_what_it_prints_and_a_skipped_block_why(tmp_path):
    """The conventions themselves, on a page made here."""
    page = tmp_path / "page.md"
    page.write_text("text\n\n<!-- not run: needs the hub -->\n```bash\nfaithkit x\n```\n\n```python\nx = 1\n```\n")
    first, second = read_blocks(page)
    assert (first.lang, first.code, first.not_run) == ("bash", "faithkit x", "needs the hub")
    assert (second.lang, second.code, second.not_run) == ("python", "x = 1", None)
    assert commands("a \\\n  b\n# prints: error: x\n# a comment\nc  # trailing\n") == [
        ("a \\\n  b", "error: x"),
        ("c  # trailing", None),
    ]
    assert with_checks("x = 1\n  f(x)  # => [1.5, 2]") == "x = 1\n  expect(f(x), '[1.5, 2]')"
    expect(0.12345, "0.1235")
    expect(("q2", "bleu"), "('q2', 'bleu')")
    with pytest.raises(AssertionError):
        expect(("q2",), "('q2', 'bleu')")
    with pytest.raises(AssertionError):
        expect([1.0259, 1.4623], "[1.0259, 1.4624]")


# ---- running them -------------------------------------------------------------------------------------------
@pytest.fixture
def scratch(tmp_path) -> Path:
    """The folder blocks run in: the checkout's files a fresh clone has, and the benchmark data beside it."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("examples", "configs", "tests", "train.py"):
        (work / name).symlink_to(ROOT / name)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(DATA)
    return work


def expect(value, shown: str) -> None:
    """``value`` is what the page shows: numbers to the digits shown, any other Python literal exactly."""
    literal = ast.literal_eval(shown)
    numbers = literal if isinstance(literal, (list, tuple)) else [literal]
    if not all(isinstance(number, (int, float)) for number in numbers):
        assert value == literal, f"{value!r}, the page shows {shown}"
        return
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    assert len(values) == len(numbers), f"{value!r}, the page shows {shown}"
    for got, number in zip(values, NUMBER.findall(shown)):
        decimals = len(number.partition(".")[2].partition("e")[0])
        assert abs(got - float(number)) <= 0.5 * 10**-decimals + 1e-12, f"{value!r}, the page shows {shown}"


def with_checks(code: str) -> str:
    """The block with each ``EXPRESSION  # => VALUE`` line turned into ``expect(EXPRESSION, "VALUE")``."""

    def check(match: re.Match) -> str:
        return f"{match['indent']}expect({match['expression']}, {match['value']!r})"

    return "\n".join(EXPECT.sub(check, line) for line in code.splitlines())


def commands(code: str) -> list[tuple[str, str | None]]:
    """A bash block's commands (continued lines joined), each with the text it must print last, if said."""
    found: list[tuple[str, str | None]] = []
    lines = iter(code.splitlines())
    for line in lines:
        if line.startswith("# prints: "):
            found[-1] = (found[-1][0], line.removeprefix("# prints: "))
        elif line.strip() and not line.lstrip().startswith("#"):
            while line.endswith("\\"):
                line += "\n" + next(lines)
            found.append((line, None))
    return found


PYTHON_PAGES = sorted({block.page for block in BLOCKS if block.lang == "python" and block.not_run is None})


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(
            page, id=str(page.relative_to(ROOT)), marks=slow_if_real("".join(b.code for b in BLOCKS if b.page == page))
        )
        for page in PYTHON_PAGES
    ],
)
def test_python_blocks(page, scratch, monkeypatch):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("FAITHKIT_DATA", str(DATA))
    namespace = {"expect": expect, "__name__": "__docs__"}
    for block in BLOCKS:
        if block.page == page and block.lang == "python" and block.not_run is None:
            exec(compile(with_checks(block.code), block.name, "exec"), namespace)


def run_command(command: str, folder: Path, capsys) -> tuple[int, str]:
    """A bash block's command: ``faithkit ...`` in this process (a subprocess would import torch again), anything
    else (``faithkit launch``, shell syntax) in bash, with ``faithkit`` as ``python -m faithkit``."""
    words = shlex.split(command.replace("\\\n", " "), comments=True)
    if words[:1] == ["faithkit"] and words[1:2] != ["launch"] and not set("|&;<>$`") & set(command.split("#")[0]):
        capsys.readouterr()
        try:
            code = run_main(*words[1:])
        except SystemExit as stop:  # argparse's mistakes
            code = stop.code
        captured = capsys.readouterr()
        return code, captured.out + captured.err
    environment = {**subprocess_env(), "FAITHKIT_DATA": str(DATA)}
    run = subprocess.run(
        ["bash", "-c", f'faithkit() {{ "{sys.executable}" -m faithkit "$@"; }}\n{command}'],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return run.returncode, run.stdout + run.stderr


@pytest.mark.slow  # commands that load models, train and sweep
@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=b.name, marks=slow_if_real(b.code)) for b in BLOCKS if b.lang == "bash" and b.not_run is None],
)
def test_bash_blocks(block, scratch, monkeypatch, capsys):
    monkeypatch.chdir(scratch)
    monkeypatch.setenv("FAITHKIT_DATA", str(DATA))
    for command, prints in commands(block.code):
        code, output = run_command(command, scratch, capsys)
        if prints is None:
            assert code == 0, f"{block.name}: {command}\n{output}"
        else:
            assert output.strip().splitlines()[-1] == prints, f"{block.name}: {command}\n{output}"


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=b.name) for b in BLOCKS if b.lang == "yaml" and b.not_run is None]
)
def test_yaml_blocks(block, scratch, monkeypatch):
    import yaml

    from faithkit.sweep import load_config

    values = yaml.safe_load(block.code)
    if "strategies" in values:
        monkeypatch.chdir(scratch)
        (scratch / "sweep.yaml").write_text(block.code)
        overrides = {
            "generator": "gemma3-270m",
            "scoring_model": "smollm2-135m",
            "input": "examples/rows.jsonl",
            "out": "DIR",
        }
        config = load_config("sweep.yaml", overrides)
        assert config.cells()


# ---- the site ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return folder


LINKS = """return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)
    .filter(href => href.startsWith('file:'));"""


@pytest.mark.slow  # a browser
def test_every_page_renders_and_every_internal_link_resolves(site, browser):
    from selenium.webdriver.common.by import By

    driver, _ = browser
    pages = sorted(site.rglob("index.html"))
    assert {page.parent.name for page in pages} >= {"api", "cli", "measurements", "faithkit.decoding", site.name}
    texts: dict[Path, str] = {}
    for page in pages:
        driver.get(page.as_uri())
        heading = driver.find_element(By.CSS_SELECTOR, "article.md-content__inner h1").text
        assert heading.rstrip("¶").strip() and driver.title.rpartition(" - ")[2] == "faithkit", (
            page
        )  # "NAV TITLE - faithkit"
        for link in driver.execute_script(LINKS):
            address, _, anchor = link.partition("#")
            target = Path(unquote(address.removeprefix("file://")))
            target = target / "index.html" if target.is_dir() else target
            assert target.is_file(), f"{page.relative_to(site)} links to missing {link}"
            if anchor and target.suffix == ".html":
                text = texts.setdefault(target, target.read_text(encoding="utf-8"))
                assert f'id="{anchor}"' in text, f"{page.relative_to(site)}: {link}"


def public_modules() -> list[str]:
    """faithkit's importable modules whose dotted name has no part starting with ``_`` (``__init__`` stands for
    its package), read from the source tree."""
    found = []
    for path in sorted((ROOT / "faithkit").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        in_packages = all((ROOT.joinpath(*parts[:depth]) / "__init__.py").is_file() for depth in range(1, len(parts)))
        if in_packages and not any(part.startswith("_") for part in parts):
            found.append(".".join(parts))
    return found


@pytest.mark.slow  # builds the site (10-30 s)
def test_the_api_reference_documents_every_public_module(site):
    documented = "".join(page.read_text(encoding="utf-8") for page in (site / "api").rglob("index.html"))
    modules = public_modules()
    assert {"faithkit", "faithkit.decoding.two_view.pmi_decode", "faithkit.metrics.registry"} <= set(modules)
    assert "faithkit.train" in modules
    assert "faithkit.hub.pmi_decode.custom_generate.generate" not in modules  # a file transformers loads, no module
    missing = [module for module in modules if f'id="{module}"' not in documented]
    assert not missing, f"modules the API reference leaves out: {missing}"
    assert 'id="faithkit.sweep.config.SweepConfig"' in documented


UNRENDERED_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|ref|doc|term):(?:`|<code>)")


@pytest.mark.slow  # builds the site (10-30 s)
def test_no_sphinx_role_is_left_as_text_in_the_site(site):
    assert UNRENDERED_ROLE.search("see :func:<code>faithkit.sweep.load_config</code>")
    shown = {
        page.relative_to(site).as_posix(): UNRENDERED_ROLE.findall(page.read_text(encoding="utf-8"))
        for page in site.rglob("*.html")
    }
    assert not {page: roles for page, roles in shown.items() if roles}


@pytest.mark.slow  # builds the site (10-30 s)
def test_pmi_decode_parameters_render_as_a_table(site):
    page = (site / "api" / "faithkit.decoding.two_view" / "index.html").read_text(encoding="utf-8")
    section = page[page.index('id="faithkit.decoding.two_view.pmi_decode.PMIDecode"') :]
    parameters = section[: section.index("</table>")]
    for name in ("alpha", "top_p", "do_sample", "temperature", "top_k", "generators"):
        assert f"<code>{name}</code>" in parameters, name
