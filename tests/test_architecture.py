"""How faithkit's modules depend on each other: no import cycles, the command line on top, every command wired.

The import graph is read from the source (ast), not by importing: every ``import`` and
``from … import`` inside faithkit, at module level or inside functions (lazy imports are
still dependencies), except those under ``if TYPE_CHECKING``. Importing ``a.b.c`` also runs
``a`` and ``a.b``, so those are edges too, except a module's own parent packages, which
Python has always started before it.
"""

from __future__ import annotations

import ast
import pkgutil
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


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for statement in node.body for child in ast.walk(statement)}
    return skipped


def _imported(name: str, path: Path, is_package: bool) -> set[str]:
    """The faithkit modules that importing ``name`` (or calling its functions) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = name if is_package else name.rsplit(".", 1)[0]
    targets = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
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
    assert {"faithkit.data", "faithkit.errors"} <= GRAPH["faithkit.jobs"]  # `from .data import …`
    assert "faithkit.data.results" in GRAPH["faithkit.data"]
    assert "faithkit.data.corpora" in GRAPH["faithkit.eval.begin"]  # a package run on the way to its module
    assert "faithkit.jobs" in GRAPH["faithkit.cli.score"]  # inside run()
    assert "faithkit.cli.shared_flags" in GRAPH["faithkit.cli.score"]
    assert "faithkit.cli" not in GRAPH["faithkit.cli.score"]  # its own package: always started first
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
    assert modules - {"options", "shared_flags", "declared_files"} == set(COMMANDS), (
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
    """A module's room: the package or top-level module of faithkit it lives in (``faithkit.metrics.q2`` -> metrics)."""
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


if __name__ == "__main__":
    print(picture(ROOMS))
