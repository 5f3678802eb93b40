"""The parts of the docs site that are generated from the code, so that a renamed module, a new flag, metric or
strategy needs no edit of docs/ (mkdocs.yml loads this file twice: as a hook, and as a griffe extension of
mkdocstrings).

* **Python API**: one page per package, ``api/PACKAGE.md``, listed under ``api.md`` in the navigation: the
  package's docstring, the names it exports, then each of its modules, those defining an export first.
* **Command line**: every command's usage and flags, read from ``faithkit.cli.build_parser()``.
* **Metrics** and **Decoding strategies**: tables read from the two registries.
* **Roles**: the docstrings' Sphinx roles (``:func:`~faithkit.x.f```) become links (plain code where the target is
  not on the site), since Markdown would show them as literal text.

The hook imports faithkit's parser and registries, which import no torch; the API pages are read from the source
by griffe, without importing it.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import re
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "faithkit"
API_INDEX = "api.md"
GENERATED_PAGES = {
    "reference/commands.md": "Command line: every flag",
    "reference/metrics.md": "Metrics",
    "reference/strategies.md": "Decoding strategies",
}
TABLE_ROW = re.compile(r"^\|.*\|$", re.MULTILINE)
CODE_SPAN = re.compile(r"(`+[^`]+`+)")
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const|type):`(?P<target>[^`]+)`")


# ---- roles -------------------------------------------------------------------------------------------------------
def role_as_link(target: str, scope: griffe.Object | None = None) -> str:
    """One role's target as an autorefs link (``~a.b.C`` shows ``C``), resolved in ``scope`` when it is relative.
    The link is optional: autorefs shows plain code for a target the site does not document."""
    shown_short = target.startswith("~")
    path = target.lstrip("~.")
    if scope is not None and not path.startswith(f"{PACKAGE}."):
        head, _, rest = path.partition(".")
        try:
            path = scope.resolve(head) + (f".{rest}" if rest else "")
        except (griffe.NameResolutionError, AttributeError):
            pass
    if scope is not None:
        path = _defined_at(scope.package, path)
    title = path.rpartition(".")[2] if shown_short else target.lstrip("~.")
    return f'<autoref identifier="{html.escape(path)}" optional><code>{html.escape(title)}</code></autoref>'


def _defined_at(package: griffe.Module, path: str) -> str:
    """Where the site documents ``path``: a name a package exports is documented in the module defining it."""
    parent_path, _, name = path.rpartition(".")
    try:
        parent = package.modules_collection[parent_path]
    except (KeyError, ValueError):  # not a path in the loaded package
        return path
    definition = _definition(parent, name) if parent.is_module else None
    return definition.path if definition is not None else path


def roles_as_links(text: str, scope: griffe.Object | None = None) -> str:
    return ROLE.sub(lambda match: role_as_link(match["target"], scope), text)


HF_PARAMETER = re.compile(r"^(?P<name>\s+\*{0,2}\w+) \(`(?P<type>[^`]+)`(?:, [^)]*)?\):", re.MULTILINE)
OPTION_CALL = re.compile(r"^option\((?P<default>[^,()]+),")


class RolesAsLinks(griffe.Extension):
    """Readies the loaded package for mkdocstrings: roles become links; a parameter written transformers' way,
    ``alpha (`float`, defaults to 0.25): …``, becomes ``alpha (float): …`` (the table's Default column says the
    default); a default that names an ``option()`` declaration or a constant holding a plain value shows that value
    (``JUDGE_LM``: ``'bigscience/bloom-560m'``); every public function and class whose docstring has no ``Args:``
    gets one made from its signature (:func:`with_parameters`), so each renders its parameters' table."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for item in list(_objects(pkg)):
            if isinstance(item, griffe.Attribute) and item.value is not None:  # a dataclass field's default
                item.value = _declared_default(pkg, item.value)
            if isinstance(item, griffe.Function):
                for parameter in item.parameters:
                    parameter.default = _declared_default(pkg, parameter.default)
            with_parameters(item)
            if item.docstring is not None:
                text = HF_PARAMETER.sub(r"\g<name> (\g<type>):", item.docstring.value)
                item.docstring.value = roles_as_links(text, item)


def _declared_default(package: griffe.Module, default):
    """``PMIParameters.alpha`` or ``option(0.25, …)`` as the value it declares, ``0.25``, and a constant that holds
    a plain value (``JUDGE_LM``) as that value; any other default as is."""
    if default is None:
        return None
    declaration = str(default)
    if isinstance(default, (griffe.ExprName, griffe.ExprAttribute)):
        try:
            declared = package.modules_collection[default.canonical_path]
            declaration = str(declared.value)
        except (KeyError, ValueError, AttributeError):
            return default
        if _is_literal(declaration):
            return declaration
    match = OPTION_CALL.match(declaration)
    return match["default"].strip() if match else default


def _is_literal(text: str) -> bool:
    """Whether ``text`` is a plain Python value (a string, a number, a tuple of them), as a default may show it."""
    import ast

    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


PARAMETERS_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Other Parameters):\s*$", re.M)


def with_parameters(item: griffe.Object) -> None:
    """A public function, method or class (its ``__init__``) whose docstring has no ``Args:`` section gets one, made
    from its signature: each parameter with its annotation and default (mkdocstrings' table reads them), described
    by the help of its ``option()`` declaration where a dataclass field has one. Written ``Args:`` sections win."""
    if item.name.startswith("_") or item.is_alias or not isinstance(item, (griffe.Class, griffe.Function)):
        return
    function = item.members.get("__init__") if isinstance(item, griffe.Class) else item
    names = [(p.name, p.kind) for p in getattr(function, "parameters", ()) if p.name not in ("self", "cls")]
    if isinstance(item, griffe.Class) and "dataclass" in item.labels and not isinstance(function, griffe.Function):
        names = [(name, None) for name, member in item.members.items() if _is_field(member)]  # griffe makes no __init__
    documented = [item.docstring, getattr(function, "docstring", None) if function is not item else None]
    names = [(name, kind) for name, kind in names if not name.startswith("_") and _is_parameter(item, name)]
    if not names or any(d is not None and PARAMETERS_SECTION.search(d.value) for d in documented):
        return
    lines = []
    for name, kind in names:
        stars = "*" if kind is griffe.ParameterKind.var_positional else ""
        stars = "**" if kind is griffe.ParameterKind.var_keyword else stars
        field = item.members.get(name) if isinstance(item, griffe.Class) else None
        helped = OPTION_HELP.match(str(getattr(field, "value", "") or ""))
        description = " ".join(helped["help"].split()) if helped else ""
        lines.append(f"    {stars}{name}: {description}".rstrip())
    section = "Args:\n" + "\n".join(lines)
    if item.docstring is None:
        item.docstring = griffe.Docstring("", parent=item)
        item.docstring.value = section  # as written: the constructor would dedent the parameters out of the section
    else:
        item.docstring.value = item.docstring.value.rstrip() + "\n\n" + section


def _is_parameter(item: griffe.Object, name: str) -> bool:
    """Not a property nor a ``ClassVar`` of the class (griffe's made-up ``__init__`` of a dataclass lists both)."""
    member = item.members.get(name) if isinstance(item, griffe.Class) else None
    if member is None or member.is_alias:
        return True
    labels = getattr(member, "labels", set())
    return "property" not in labels and not ("class-attribute" in labels and "instance-attribute" not in labels)


def _is_field(member) -> bool:
    """A dataclass field: an annotated attribute of the class that is no ``ClassVar``."""
    annotation = str(getattr(member, "annotation", None) or "")
    return getattr(member, "is_attribute", False) and bool(annotation) and "ClassVar" not in annotation


OPTION_HELP = re.compile(r"^option\([^,]+,\s*(?P<q>['\"])(?P<help>(?:(?!(?P=q)).)*)(?P=q)", re.S)


def _objects(item: griffe.Object):
    yield item
    for member in item.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


# ---- the API pages -----------------------------------------------------------------------------------------------
def packages(root: griffe.Module) -> list[griffe.Module]:
    """The package and its public subpackages, depth first."""
    found = [root]
    for member in sorted(root.modules.values(), key=lambda module: module.name):
        if _is_package(member) and not member.name.startswith("_"):
            found += packages(member)
    return found


def _is_package(module: griffe.Module) -> bool:
    return module.is_package or module.is_subpackage


def public_modules(package: griffe.Module) -> list[griffe.Module]:
    """The package's own modules (not its subpackages'), those that define a name it exports first."""
    modules = [m for m in package.modules.values() if not _is_package(m) and not m.name.startswith("_")]
    exporters: list[str] = []
    for export in exported(package):
        home = export.canonical_path.removeprefix(f"{package.path}.").partition(".")[0]
        if home not in exporters:
            exporters.append(home)
    rank = {name: number for number, name in enumerate(exporters)}
    return sorted(modules, key=lambda module: (rank.get(module.name, len(rank)), module.name))


def exported(package: griffe.Module) -> list[griffe.Object]:
    """What the package exports, where each is defined: the names of its ``__all__`` when griffe can read it (a
    computed one it cannot), else the names it imports from its own modules."""
    names = [str(name) for name in package.exports or ()] or [
        name
        for name, member in package.members.items()
        if member.is_alias and member.target_path.startswith(f"{package.path}.") and not name.startswith("_")
    ]
    found = [_definition(package, name) for name in names]
    return [item for item in found if item is not None and not item.is_module]


def _definition(package: griffe.Module, name: str) -> griffe.Object | None:
    """The object ``package.name`` stands for: an import resolved, or a name its ``__getattr__`` loads from one of
    its modules."""
    member = package.members.get(name)
    if member is not None and not member.is_alias:
        return member  # type: ignore[return-value]
    if member is not None:
        try:
            return member.final_target  # type: ignore[return-value]
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            return None
    for module in package.modules.values():
        candidate = module.members.get(name)
        if candidate is not None and not candidate.is_alias:
            return candidate  # type: ignore[return-value]
    return None


def summary(docstring: str) -> str:
    """A docstring's first paragraph, on one line."""
    return " ".join(docstring.strip().split("\n\n")[0].split())


def _docstring(item: griffe.Object) -> str:
    return item.docstring.value if item.docstring else ""


def api_page(package: griffe.Module) -> str:
    lines = [f"# `{package.path}`", "", f"::: {package.path}", "    options:", "      members: false"]
    lines += ["      show_root_heading: false", ""]
    exports = exported(package)
    if exports:
        lines += ["## What it exports", "", "| name | what it is |", "|---|---|"]
        for target in exports:
            link = role_as_link(f"~{target.path}")
            lines.append(f"| {link} | {_cell(roles_as_links(summary(_docstring(target)), target))} |")
        lines.append("")
    for module in public_modules(package):
        lines += [f"::: {module.path}", ""]
    return "\n".join(lines)


def api_index(tree: list[griffe.Module]) -> str:
    lines = ["| package | what it holds |", "|---|---|"]
    for package in tree:
        lines.append(
            f"| [`{package.path}`]({_api_file(package)}) | {_cell(roles_as_links(summary(_docstring(package)), package))} |"
        )
    return "\n".join(lines)


def _api_file(package: griffe.Module) -> str:
    return f"api/{package.path}.md"


def _cell(text: str) -> str:
    """Text for a table cell: its pipes escaped, except in code spans (where the table already ignores them)."""
    parts = CODE_SPAN.split(text.replace("\n", "<br>"))
    return "".join(part if number % 2 else part.replace("|", "\\|") for number, part in enumerate(parts))


# ---- the command line --------------------------------------------------------------------------------------------
def commands_page() -> str:
    from faithkit.cli import build_parser

    parser = build_parser()
    lines = [
        f"# {GENERATED_PAGES['reference/commands.md']}",
        "",
        "Every command and flag, generated from the parser that `faithkit` runs (`faithkit COMMAND --help` prints the "
        "same). How jobs resume, what they read and write: [Command line](../cli.md).",
        "",
    ]
    for name, command in _subcommands(parser, "faithkit"):
        lines += _command_section(name, command)
    return "\n".join(lines)


def _subcommands(parser: argparse.ArgumentParser, name: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child, subparser in action.choices.items():
                if _subcommands_of(subparser):
                    yield from _subcommands(subparser, f"{name} {child}")
                else:
                    yield f"{name} {child}", subparser


def _subcommands_of(parser: argparse.ArgumentParser) -> bool:
    return any(isinstance(action, argparse._SubParsersAction) for action in parser._actions)


def _command_section(name: str, parser: argparse.ArgumentParser) -> list[str]:
    usage = " ".join(parser.format_usage().removeprefix("usage: ").split())
    lines = [f"## `{name}`", "", html.escape(parser.description or ""), "", "```text", usage, "```", ""]
    formatter = parser._get_formatter()
    for group in parser._action_groups:
        actions = [action for action in group._group_actions if action.help != argparse.SUPPRESS]
        if not actions:
            continue
        lines += [f"**{html.escape(group.title or '')}**", "", "| flag | default | what it sets |", "|---|---|---|"]
        for action in actions:
            flags = ", ".join(f"`{flag}`" for flag in action.option_strings) or f"`{action.metavar or action.dest}`"
            default = "" if action.default in (None, argparse.SUPPRESS) else f"`{action.default}`"
            helped = html.escape(formatter._expand_help(action)) if action.help else ""
            lines.append(f"| {flags} | {_cell(default)} | {_cell(helped)} |")
        lines.append("")
    return lines


# ---- the registries ----------------------------------------------------------------------------------------------
def metrics_page() -> str:
    from faithkit.metrics import METRICS

    lines = [
        f"# {GENERATED_PAGES['reference/metrics.md']}",
        "",
        "Every metric of the registry (`faithkit.metrics.METRICS`), by the name `--metric`, sweeps and training hooks "
        "take; generated from it. The scores are the per-response fields it writes, main score first; the measures "
        "are the corpus-level numbers sweeps and tables report (▲ higher is better: more faithful; ▼ lower is; each "
        "key's direction, declared once in the registry, is what meta-evaluations, sweeps and rerank rank by).",
        "",
        "| metric | what it measures | scores | options | measures |",
        "|---|---|---|---|---|",
    ]
    for name, spec in METRICS.items():
        measures = ", ".join(f"{measure.title} {_direction(measure.higher_is_better)}" for measure in spec.measures)
        lines.append(
            f"| `{name}` | {_cell(roles_as_links(spec.summary))} | "
            f"{', '.join(f'`{key}` {_direction(spec.directions[key])}'.strip() for key in spec.score_keys)} | "
            f"{_codes(spec.options)} "
            f"| {_cell(measures)} |"
        )
    return "\n".join(lines)


def _direction(higher_is_better: bool | None) -> str:
    return {True: "▲", False: "▼", None: ""}[higher_is_better]


def strategies_page() -> str:
    from faithkit.decoding import STRATEGIES

    lines = [
        f"# {GENERATED_PAGES['reference/strategies.md']}",
        "",
        "Every decoding strategy of the registry (`faithkit.decoding.STRATEGIES`), by the name `--strategy` and a "
        "sweep's `strategies:` take, with its parameters and their defaults; generated from it. How they decode: "
        "[Decoding strategies](../decoding.md).",
        "",
        "| strategy | what it does | parameters (defaults) |",
        "|---|---|---|",
    ]
    for name, strategy in STRATEGIES.items():
        parameters = ", ".join(f"`{field.name}={field.default!r}`" for field in dataclasses.fields(strategy))
        what = summary(strategy.__doc__ or "")
        lines.append(f"| `{name}` | {_cell(roles_as_links(what))} | {parameters} |")
    return "\n".join(lines)


def _codes(names) -> str:
    return ", ".join(f"`{name}`" for name in names)


# ---- the hook ----------------------------------------------------------------------------------------------------
_TREE: list[griffe.Module] = []  # the packages, read once per build (`mkdocs serve` builds again on every edit)


def on_config(config, **kwargs):
    """The API index's entry in the navigation becomes a section: the index, then one page per package."""
    loaded = griffe.load(PACKAGE, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    _TREE[:] = tree = packages(loaded)  # type: ignore[arg-type]
    pages = [API_INDEX, *({package.path: _api_file(package)} for package in tree)]
    config["nav"] = _with_api_section(config["nav"], pages)
    return config


def _with_api_section(nav, pages):
    if isinstance(nav, list):
        return [_with_api_section(item, pages) for item in nav]
    if isinstance(nav, dict):
        return {title: pages if value == API_INDEX else _with_api_section(value, pages) for title, value in nav.items()}
    return nav


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    generated = {_api_file(package): api_page(package) for package in _TREE}
    generated["reference/commands.md"] = commands_page()
    generated["reference/metrics.md"] = metrics_page()
    generated["reference/strategies.md"] = strategies_page()
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, **kwargs):
    """The API index lists the packages where it says ``<!-- packages -->``; a table's code spans show ``|`` where
    the page escapes it for GitHub (which needs ``\\|`` even there, where Python-Markdown would show both)."""
    if page.file.src_uri == API_INDEX:
        markdown = markdown.replace("<!-- packages -->", api_index(_TREE))
    return TABLE_ROW.sub(lambda row: CODE_SPAN.sub(lambda code: code[0].replace("\\|", "|"), row[0]), markdown)
