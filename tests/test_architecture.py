"""How faithkit's modules depend on each other: no import cycles, the command line on top, every command wired;
and how big its pieces are: files, public functions and their parameters, counted from the source.

The import graph is read from the source (ast), not by importing: every ``import`` and
``from … import`` inside faithkit, at module level, inside functions (lazy imports are
still dependencies) or under ``if TYPE_CHECKING`` (a type named across modules ties them as
much as a call does: a circle hidden there is still a circle). Importing ``a.b.c`` also runs
``a`` and ``a.b``, so those are edges too, except a module's own parent packages, which
Python has always started before it.
"""

from __future__ import annotations

import ast
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import faithkit
from faithkit.cli import COMMANDS, build_parser

PACKAGE_DIR = Path(faithkit.__file__).parent


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every faithkit module by dotted name: (source file, is a package). Found without importing any."""
    modules = {"faithkit": (PACKAGE_DIR / "__init__.py", True)}

    def walk(folder: Path, prefix: str) -> None:
        for info in pkgutil.iter_modules([str(folder)], prefix):
            if info.ispkg:
                sub = folder / info.name.rsplit(".", 1)[1]
                modules[info.name] = (sub / "__init__.py", True)
                walk(sub, info.name + ".")
            else:
                modules[info.name] = (folder / (info.name.rsplit(".", 1)[1] + ".py"), False)

    walk(PACKAGE_DIR, "faithkit.")
    return modules


MODULES = _modules()


def _imported(name: str, path: Path, is_package: bool) -> set[str]:
    """The faithkit modules that importing ``name`` (or calling its functions) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if is_package else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module
            targets.add(base)
            targets |= {f"{base}.{alias.name}" for alias in node.names}  # `from pkg import submodule`
    edges = set()
    for target in targets:
        parts = target.split(".")
        for end in range(1, len(parts) + 1):  # the module and the packages it runs on the way
            module = ".".join(parts[:end])
            if module in MODULES and module != name and not name.startswith(module + "."):
                edges.add(module)
    return edges


GRAPH = {name: _imported(name, path, is_package) for name, (path, is_package) in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected group of modules (Tarjan), as a path that returns to its start."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)

    def path_back(start: str, group: set[str]) -> list[str]:
        paths = [[start]]
        while paths:
            path = paths.pop(0)
            for target in sorted(graph[path[-1]] & group):
                if target == start:
                    return path + [start]
                if target not in path:
                    paths.append(path + [target])
        raise AssertionError("a strongly connected group always has a cycle")

    return [path_back(min(group), group) for group in groups]


def test_the_graph_sees_module_level_and_function_level_imports():
    assert {"faithkit.data", "faithkit.data.paths", "faithkit.errors"} <= GRAPH["faithkit.serving.models"]
    assert "faithkit.data.results" in GRAPH["faithkit.data"]
    assert "faithkit.data.corpora" in GRAPH["faithkit.eval.begin"]  # a package run on the way to its module
    assert "faithkit.data.jobs" in GRAPH["faithkit.cli.score"]  # inside run()
    assert "faithkit.cli.shared_flags" in GRAPH["faithkit.cli.score"]
    assert "faithkit.cli" not in GRAPH["faithkit.cli.score"]  # its own package: always started first
    assert "faithkit.decoding.two_view.pmi_decode" in GRAPH["faithkit.decoding"]  # under `if TYPE_CHECKING:`
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    cycles = [" -> ".join(cycle) for cycle in _cycles(GRAPH)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_library_module_imports_the_command_line():
    library = [
        name
        for name in GRAPH
        if not (name == "faithkit.cli" or name.startswith("faithkit.cli.")) and name != "faithkit.__main__"
    ]
    offenders = {
        name: sorted(t for t in GRAPH[name] if t == "faithkit.cli" or t.startswith("faithkit.cli.")) for name in library
    }
    assert not {name: targets for name, targets in offenders.items() if targets}


def test_every_command_module_is_registered_and_every_command_runs():
    modules = {name.rsplit(".", 1)[1] for name in MODULES if name.startswith("faithkit.cli.")}
    assert modules - {"shared_flags", "declared_files"} == set(COMMANDS), (
        "modules in faithkit/cli/ that are no command, or the reverse"
    )
    for name in COMMANDS:
        assert callable(getattr(__import__(f"faithkit.cli.{name}", fromlist=["register"]), "register", None)), name

    def leaves(parser, path):
        commands = [action for action in parser._actions if action.__class__.__name__ == "_SubParsersAction"]
        if not commands:
            yield path, parser
            return
        for name, sub in commands[0].choices.items():
            yield from leaves(sub, [*path, name])

    found = list(leaves(build_parser(), []))
    assert len(found) >= len(COMMANDS)
    for path, parser in found:
        assert callable(parser.get_default("run")), f"'faithkit {' '.join(path)}' has no run"


# ---- rooms and floors: the picture in docs/architecture.md ----------------------------------------------------
def room_of(module: str) -> str:
    """A module's room: the package or top-level module of faithkit it lives in (``faithkit.metrics.q2.metric`` -> metrics)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "faithkit"


ROOMS: dict[str, set[str]] = {}
for _module, _targets in GRAPH.items():
    ROOMS.setdefault(room_of(_module), set()).update(room_of(t) for t in _targets if room_of(t) != room_of(_module))
ROOMS = {room: targets for room, targets in ROOMS.items() if room not in ("faithkit", "__main__")}  # the entry points


def floors(rooms: dict[str, set[str]]) -> dict[str, int]:
    """Each room's floor: 0 for a room that imports no other, else one above the highest room it imports."""
    floor: dict[str, int] = {}

    def place(room: str, path: tuple[str, ...] = ()) -> int:
        if room in path:
            raise AssertionError(f"rooms in a circle: {' -> '.join((*path, room))}")
        if room not in floor:
            floor[room] = 1 + max((place(t, (*path, room)) for t in rooms.get(room, ())), default=-1)
        return floor[room]

    for room in sorted(rooms):
        place(room)
    return floor


def picture(rooms: dict[str, set[str]]) -> str:
    """The floors from the top down, each room with the rooms it imports: every arrow points to a lower floor."""
    floor = floors(rooms)
    lines = []
    for level in range(max(floor.values()), -1, -1):
        for room in sorted(r for r in floor if floor[r] == level):
            below = ", ".join(sorted(rooms[room], key=lambda r: (-floor[r], r)))
            lines.append(f"{level:>2}  {room:<12}{' -> ' + below if below else ''}")
    return "\n".join(lines)


def test_rooms_stand_on_floors_no_arrow_runs_back_up():
    assert floors({"a": {"b"}, "b": {"c"}, "c": set()}) == {"a": 2, "b": 1, "c": 0}
    floors(ROOMS)  # raises on rooms in a circle, the only way an arrow could run back up


def test_metrics_and_decoding_are_siblings():
    """Neither reaches the other through any room: scoring a response and decoding one are separate concerns,
    joined only above them (reranking, the sweep, training)."""

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for target in ROOMS.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    assert "decoding" not in reaches("metrics") and "metrics" not in reaches("decoding")


def test_the_docs_picture_is_the_code():
    page = (PACKAGE_DIR.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"```text\n{picture(ROOMS)}\n```" in page, (
        "docs/architecture.md's floors differ from the imports: paste the output of "
        "'python tests/test_architecture.py' there"
    )


# ---- sizes: one idea per file, short functions with short signatures ------------------------------------------
MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 50
MAX_PARAMETERS = 7
LONG_FILE_REASON = "Over 450 lines: "
"""How a module's docstring says why it stays long (a sentence after this, on a line of its own)."""
APOLOGY = re.compile(r"many (parameters|arguments)|parameters because|arguments because", re.IGNORECASE)
"""A docstring apologising for its signature: shorten the signature instead."""
WIDE_SIGNATURE_REASON = "Wide signature: "
"""How a function whose parameters are set from outside (a loop transformers calls by keyword) or are themselves
the declaration API says so (a docstring line starting with this); its parameter count is then not held against it,
its lines and its docstring still are."""


@dataclass(frozen=True)
class Function:
    """A public function or method: where it is, its lines (its docstring left out), its parameters and whether its
    docstring apologises."""

    where: str  # faithkit/x.py:LINE qualified.name
    lines: int
    parameters: int
    constructor: bool
    apologises: bool
    wide_by_design: bool = False


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Named parameters a caller can pass: not ``self``/``cls``, not ``*args``/``**kwargs`` (they pass through)."""
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    return len([name for name in names if name not in ("self", "cls")])


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of the function's docstring: not counted in its length (its Args and Examples are the reader's)."""
    first = node.body[0]
    if ast.get_docstring(node) is None:
        return 0
    return first.end_lineno - first.lineno + 1


def public_functions(path: Path, relative: str) -> list[Function]:
    """The public functions of a module: module-level ones and the methods of its public classes (``__init__``
    included), by name not starting with ``_``; functions nested in others are their parts, not counted."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if child.name.startswith("_") and child.name != "__init__":
                    continue
                docstring = ast.get_docstring(child) or ""
                found.append(
                    Function(
                        f"{relative}:{child.lineno} {prefix}{child.name}",
                        child.end_lineno - child.lineno + 1 - _docstring_lines(child),
                        _parameters(child),
                        child.name == "__init__",
                        bool(APOLOGY.search(docstring)),
                        any(line.strip().startswith(WIDE_SIGNATURE_REASON) for line in docstring.splitlines()),
                    )
                )

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def _sources() -> dict[str, Path]:
    return {path.relative_to(PACKAGE_DIR.parent).as_posix(): path for path, _ in MODULES.values()}


SOURCES = _sources()
FUNCTIONS = [f for relative, path in SOURCES.items() for f in public_functions(path, relative)]


def _lines(path: Path) -> int:
    """The file's lines, its docstrings left out (a module's, a class's, a function's, an attribute's): documentation
    with examples is the reader's, not another idea."""
    text = path.read_text(encoding="utf-8")
    documentation = {
        line
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for line in range(node.lineno, node.end_lineno + 1)
    }
    return len(text.splitlines()) - len(documentation)


def test_the_counts_see_what_they_count(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "def f(a, b, *args, c=1, **kwargs):\n    return 1\n\n\ndef _hidden(x):\n    pass\n\n\n"
        'class C:\n    def __init__(self, x):\n        """It takes many parameters because …"""\n\n'
        "    def _own(self):\n        def inner():\n            pass\n\n\n"
        'def g(a, b, c, d, e, f, g, h):\n    """Wide signature: a library calls it by these keywords."""\n'
    )
    assert public_functions(source, "m.py") == [
        Function("m.py:1 f", 2, 3, False, False),
        Function("m.py:10 C.__init__", 1, 1, True, True),  # its docstring not counted
        Function("m.py:18 g", 1, 8, False, False, True),
    ]
    assert _lines(source) == 17  # 19 lines, its two docstrings' left out


def test_files_hold_one_idea_each():
    """No file over 450 lines unless its docstring says why (a line starting 'Over 450 lines: ')."""
    long = {relative: _lines(path) for relative, path in SOURCES.items() if _lines(path) > MAX_FILE_LINES}
    unexplained = {
        relative: lines
        for relative, lines in long.items()
        if not any(
            line.strip().startswith(LONG_FILE_REASON)
            for line in (ast.get_docstring(ast.parse(SOURCES[relative].read_text(encoding="utf-8"))) or "").splitlines()
        )
    }
    assert not unexplained, f"split these files by idea, or say why they stay long: {unexplained}"


def _listed(offenders: list[str]) -> str:
    return "\n".join(offenders)


def test_public_functions_are_short():
    long = [f"{f.where}: {f.lines} lines" for f in FUNCTIONS if f.lines > MAX_FUNCTION_LINES]
    assert not long, "shorten these (or make them private parts of a short public one):\n" + _listed(long)


def test_public_functions_take_few_parameters():
    """At most 7 named parameters; a constructor's are its class's settings, each a named field as a dataclass's
    would be, so they are not counted (its lines are). Parameters that travel together go in a small dataclass; a
    signature set from outside says why on a docstring line starting 'Wide signature: '."""
    wide = [
        f"{f.where}: {f.parameters}"
        for f in FUNCTIONS
        if not f.constructor and not f.wide_by_design and f.parameters > MAX_PARAMETERS
    ]
    assert not wide, "group the parameters that travel together into a small dataclass:\n" + _listed(wide)


def test_no_docstring_apologises_for_its_signature():
    sorry = [f.where for f in FUNCTIONS if f.apologises]
    assert not sorry, "shorten the signature instead of apologising for it:\n" + _listed(sorry)


def counts() -> str:
    """The size figures: files, public functions, parameters, and the largest of each."""
    sizes = sorted(((_lines(path), relative) for relative, path in SOURCES.items()), reverse=True)
    by_lines = sorted(FUNCTIONS, key=lambda f: -f.lines)
    by_parameters = sorted(
        (f for f in FUNCTIONS if not f.constructor and not f.wide_by_design), key=lambda f: -f.parameters
    )
    lengths = sorted(f.lines for f in FUNCTIONS)
    return "\n".join(
        [
            f"files: {len(sizes)}, {sum(n for n, _ in sizes)} lines; over {MAX_FILE_LINES}: "
            f"{sum(n > MAX_FILE_LINES for n, _ in sizes)}; largest: "
            + ", ".join(f"{relative} {n}" for n, relative in sizes[:3]),
            f"public functions: {len(FUNCTIONS)}, median {lengths[len(lengths) // 2]} lines; over {MAX_FUNCTION_LINES}: "
            f"{sum(f.lines > MAX_FUNCTION_LINES for f in FUNCTIONS)}; longest: "
            + ", ".join(f"{f.where} {f.lines}" for f in by_lines[:3]),
            f"parameters: over {MAX_PARAMETERS} (constructors aside): "
            f"{sum(f.parameters > MAX_PARAMETERS for f in by_parameters)}; most: "
            + ", ".join(f"{f.where} {f.parameters}" for f in by_parameters[:3]),
            f"apologising docstrings: {sum(f.apologises for f in FUNCTIONS)}",
            f"wide signatures with a reason: {', '.join(f.where for f in FUNCTIONS if f.wide_by_design) or 'none'}",
        ]
    )


if __name__ == "__main__":
    print(picture(ROOMS))
    print()
    print(counts())
