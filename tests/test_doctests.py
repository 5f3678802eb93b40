"""The ``Examples:`` of the docstrings of faithkit's front doors run as doctests, so that none shows an output the
code no longer gives; and the modules that promise front doors keep them.

How a docstring's example is written (docs/contributing.md tells writers the same), as transformers'
``logits_process.py`` writes its own:

* an ``Examples:`` section holding a fenced ```` ```python ```` block of ``>>>`` lines, each followed by the output it
  prints: exactly (round numbers in the example, ``round(x, 4)``), deterministic on a CPU, offline;
* the fence lines are not part of the example (a closing fence may follow the last output directly);
* an example imports what it uses: it runs in a namespace of its own, not its module's.

Examples that load a real offline model (``smollm2-135m``, ``gemma3-270m``, the checker that ships on SmolLM2) are
``slow`` and run in the real models' group of workers; there :func:`faithkit.serving.models.load` reads each model
from disk once per test run and hands every example a copy of its own (an example may change its model: the
checker merges its adapter into it). The others use small hand-made inputs or tiny random models and take well under
a second each.

Discovery reads the source (ast), so collecting these tests imports neither faithkit's modules nor torch.
"""

from __future__ import annotations

import ast
import copy
import doctest
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("faithkit/decoding", "faithkit/metrics", "faithkit/checker")
"""Where docstrings' examples run: the front doors of decoding, of the metrics, and of the claim checker."""
REAL_MODELS = re.compile(
    r"models\.(load|resolve)\(|load_checker\(|model=\"(smollm2-135m|gemma3-270m)\"|load_metric\(\"faithkit-checker\"|"
    r"preset=\"offline\""
)
"""An example that loads a real offline model (or its tokenizer: a fresh clone converts the model first)."""
FENCE = re.compile(r"^\s*```\w*\s*$")
OPTIONS = doctest.NORMALIZE_WHITESPACE
"""A long list may wrap where the example shows it wrapped; nothing else is loose (no ellipsis)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def docstring(node) -> tuple[str, int]:
    """``node``'s docstring and the line before its first (doctest counts from there), or ``("", 0)``."""
    text = ast.get_docstring(node, clean=False)
    return (text, node.body[0].lineno - 1) if text else ("", 0)


def documented(node, prefix: str = ""):
    """``(qualified name, docstring, line)`` of ``node`` ("") and its classes, functions and methods, depth first."""
    yield (prefix.rstrip("."), *docstring(node))
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            yield from documented(child, f"{prefix}{child.name}.")
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield (f"{prefix}{child.name}", *docstring(child))


def examples() -> list[tuple[str, str, str, int]]:
    """``(module, qualified name or "", docstring, line)`` of every docstring under :data:`PACKAGES` with ``>>>``."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for name, text, line in documented(ast.parse(path.read_text(encoding="utf-8"))):
                if ">>>" in text:
                    found.append((module_name(path), name, text, line))
    return found


EXAMPLES = examples()


def unfenced(text: str) -> str:
    """The docstring with its fence lines blank: doctest would read a closing fence as output."""
    return "\n".join("" if FENCE.match(line) else line for line in text.splitlines())


def target(module: str, name: str):
    item = importlib.import_module(module)
    for part in filter(None, name.split(".")):
        item = getattr(item, part)
    return item


# ---- the real models, read from disk once ---------------------------------------------------------------------------
_LOADED: dict[str, tuple] = {}


def _plain(options: dict) -> bool:
    """A load with the defaults (the head the config names, the default device and dtype, for inference)."""
    return all(value in (None, False) or (key == "kind" and value == "causal") for key, value in options.items())


@pytest.fixture
def models_loaded_once(monkeypatch):
    """:func:`faithkit.serving.models.load` reading each model once per process, each caller getting its own copy."""
    from faithkit.serving import models

    load = models.load

    def shared(name, **options):
        if not _plain(options):
            return load(name, **options)
        if name not in _LOADED:
            _LOADED[name] = load(name)
        return copy.deepcopy(_LOADED[name])

    monkeypatch.setattr(models, "load", shared)


def marks(text: str) -> list:
    return [pytest.mark.slow, pytest.mark.xdist_group("real-models")] if REAL_MODELS.search(text) else []


@pytest.mark.parametrize(
    "module, name, text, line",
    [
        pytest.param(*example, id=f"{example[0]}.{example[1]}".rstrip("."), marks=marks(example[2]))
        for example in EXAMPLES
    ],
)
def test_docstring_examples(module, name, text, line, request, monkeypatch):
    """Each docstring's example, run as a reader would paste it: its own imports, its outputs as shown."""
    if REAL_MODELS.search(text):
        request.getfixturevalue("models_loaded_once")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    item = target(module, name)
    source = inspect.getsourcefile(inspect.unwrap(item))
    parsed = doctest.DocTestParser().get_doctest(unfenced(text), {"__name__": module}, f"{module}.{name}", source, line)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    result = runner.run(parsed, out=report.append, clear_globs=True)
    assert result.attempted, f"{module}.{name}: no example found"
    assert not result.failed, "".join(report)


def test_an_example_may_close_its_fence_right_after_its_output():
    text = "Examples:\n\n    ```python\n    >>> 1 + 1\n    2\n    ```\n"
    parsed = doctest.DocTestParser().get_doctest(unfenced(text), {}, "t", None, 0)
    assert [(e.source, e.want) for e in parsed.examples] == [("1 + 1\n", "2\n")]


# ---- front doors: every public class and function of a covered module has Args and an example with its output ----
COVERED = (
    "faithkit.decoding.base",
    "faithkit.decoding.generation_options",
    "faithkit.decoding.inputs",
    "faithkit.decoding.sampling",
    "faithkit.decoding.strategies",
    "faithkit.decoding.two_view.cad",
    "faithkit.decoding.two_view.custom_generate",
    "faithkit.decoding.two_view.parameters",
    "faithkit.decoding.two_view.pmi_decode",
    "faithkit.decoding.two_view.processor",
    "faithkit.decoding.two_view.strategies",
    "faithkit.metrics.base",
    "faithkit.metrics.claim_windows",
    "faithkit.metrics.corpus",
    "faithkit.metrics.evaluate_modules",
    "faithkit.metrics.faith_judge",
    "faithkit.metrics.faithkit_checker",
    "faithkit.metrics.lexical",
    "faithkit.metrics.llm_judge",
    "faithkit.metrics.metric_options",
    "faithkit.metrics.model_roles",
    "faithkit.metrics.pmi_faith",
    "faithkit.metrics.registry",
    "faithkit.metrics.token_evidence",
)
"""The modules whose front doors are complete; a module joins when all its public names have theirs."""
SECTION = re.compile(r"^\s*(\w[\w ]*):\s*$")


def sections(text: str) -> dict[str, str]:
    """A Google-style docstring's sections by title (``Args``, ``Examples``), each its text (a line inside a fenced
    block, ``Document:`` say, is no title)."""
    found: dict[str, list[str]] = {"": []}
    current, fenced = "", False
    for line in inspect.cleandoc(text).splitlines():
        fenced ^= bool(FENCE.match(line))
        match = SECTION.match(line)
        if match and not line.startswith(" ") and not fenced:
            current = match[1]
            found[current] = []
        else:
            found[current].append(line)
    return {title: "\n".join(lines) for title, lines in found.items()}


def parameters(item) -> list[str]:
    """The names a caller passes: a class's constructor's (a dataclass's fields), not ``self``; ``**name`` kept."""
    try:
        signature = inspect.signature(item)
    except (TypeError, ValueError):
        return []
    return [
        ("**" if parameter.kind is parameter.VAR_KEYWORD else "*" if parameter.kind is parameter.VAR_POSITIONAL else "")
        + name
        for name, parameter in signature.parameters.items()
        if name not in ("self", "cls")
    ]


def missing_parts(item) -> list[str]:
    """What ``item``'s docstring lacks of a front door: Args (a NamedTuple's Attributes) naming each parameter, an
    example showing output."""
    found = sections(item.__doc__ or "")
    gaps = []
    args = found.get("Args", "") + found.get("Attributes", "")  # a NamedTuple's fields are its attributes
    named = [name for name in parameters(item) if not re.search(rf"^\s*{re.escape(name)} \(", args, re.MULTILINE)]
    if named:
        gaps.append(f"Args for {', '.join(named)}")
    examples = doctest.DocTestParser().get_examples(unfenced(found.get("Examples", "")))
    if not any(example.want for example in examples):
        gaps.append("an Examples section whose output is shown")
    return gaps


def public_names(module) -> list[str]:
    """The module's public classes and functions, those it defines (not those it imports)."""
    return [
        name
        for name, item in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(item) or inspect.isfunction(item))
        and getattr(item, "__module__", None) == module.__name__
    ]


@pytest.mark.parametrize("module_name", COVERED)
def test_covered_modules_have_front_doors(module_name):
    module = importlib.import_module(module_name)
    gaps = {name: missing_parts(getattr(module, name)) for name in public_names(module)}
    assert not {name: gap for name, gap in gaps.items() if gap}, f"{module_name}: front doors lacking: {gaps}"


def test_a_front_door_names_every_parameter_and_shows_an_output():
    def scale(value: float, factor: float = 2.0, **options) -> float:
        """Args:
            value (`float`): the number.

        Examples:

        ```python
        >>> scale(1.5)
        ```
        """
        return value * factor

    assert missing_parts(scale) == ["Args for factor, **options", "an Examples section whose output is shown"]
    assert sections("Examples:\n\n```python\n>>> print('Document:')\nDocument:\n```\n")["Examples"].count(">>>") == 1
