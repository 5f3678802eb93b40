"""The API reference as mkdocstrings reads it (griffe, with scripts/docs_site.py's extension), without building the
site: every public function and class renders its parameters, no docstring shows reST literally, and no default is
shown as the name of a constant that holds a plain value."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import docs_site  # noqa: E402

REST_LITERAL = re.compile(r"[^\s:]::[ \t]*$", re.MULTILINE)  # "holds::", "``NAME``::"


@pytest.fixture(scope="module")
def package():
    return griffe.load(
        "faithkit",
        search_paths=[str(ROOT)],
        docstring_parser="google",
        docstring_options={"warn_missing_types": False},
        extensions=griffe.load_extensions(docs_site.RolesAsLinks),
    )


def public_objects(package):
    """Every public function and class (and method) the API pages document: each public module's own members."""
    for pkg in docs_site.packages(package):
        for module in [pkg, *docs_site.public_modules(pkg)]:
            for member in module.members.values():
                if member.is_alias or member.name.startswith("_"):
                    continue
                if isinstance(member, (griffe.Function, griffe.Class)):
                    yield member
                if isinstance(member, griffe.Class):
                    yield from (
                        method
                        for method in member.members.values()
                        if isinstance(method, griffe.Function)
                        and not method.is_alias
                        and not method.name.startswith("_")
                    )


def parameter_names(item) -> list[str]:
    function = item.members.get("__init__") if isinstance(item, griffe.Class) else item
    if isinstance(function, griffe.Function):
        return [p.name for p in function.parameters if p.name not in ("self", "cls") and not p.name.startswith("_")]
    if "dataclass" in item.labels:
        return [name for name, member in item.members.items() if docs_site._is_field(member) and name[0] != "_"]
    return []


def test_every_public_function_and_class_renders_its_parameters(package):
    missing = []
    for item in public_objects(package):
        names = parameter_names(item)
        if not names:
            continue
        docstrings = [item.docstring, getattr(item.members.get("__init__"), "docstring", None)]
        sections = [s for d in docstrings if d is not None for s in d.parse("google")]
        listed = {p.name.lstrip("*") for s in sections if s.kind.value == "parameters" for p in s.value}
        if not listed:
            missing.append(item.path)
    assert missing == []
    placement = package["serving.precision.Placement"]
    [section] = [s for s in placement.docstring.parse("google") if s.kind.value == "parameters"]
    assert [(p.name, p.description) for p in section.value][0] == (
        "device",
        "torch device (default: cuda if available, else cpu)",
    )  # a dataclass field declared with option() is described by its help


def test_no_docstring_shows_rest_literally(package):
    modules = [module for pkg in docs_site.packages(package) for module in [pkg, *docs_site.public_modules(pkg)]]
    assert [
        item.path
        for item in [*modules, *public_objects(package)]
        if item.docstring and REST_LITERAL.search(item.docstring.value)
    ] == []


def test_a_constant_holding_a_plain_value_is_shown_as_that_value(package):
    init = package["metrics.pmi_faith.PMIFaith"].members["__init__"]
    assert str(init.parameters["model"].default) == "'bigscience/bloom-560m'"
    names = []
    for item in public_objects(package):
        function = item.members.get("__init__") if isinstance(item, griffe.Class) else item
        for parameter in getattr(function, "parameters", ()):
            default = parameter.default
            if isinstance(default, griffe.ExprName) and re.fullmatch(r"[A-Z][A-Z0-9_]+", str(default)):
                try:
                    value = str(package.modules_collection[default.canonical_path].value)
                except (KeyError, AttributeError, ValueError):
                    continue
                if docs_site._is_literal(value):
                    names.append(f"{item.path}({parameter.name}={default})")
    assert names == []
