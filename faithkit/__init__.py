"""faithkit: make document-grounded dialogue models say only what their documents support, and measure it.

Start-up time: most of faithkit imports torch, which takes seconds, while the command line only needs the options'
declarations to build its flags and answer ``--help``. So a package's front door (``faithkit.decoding``,
``faithkit.metrics``, ``faithkit.sweep``, ``faithkit.train``, and this package's subpackages) loads each name on
first use, through :func:`lazy_names`: the one place faithkit imports lazily for start-up time. A package lists its
names as ordinary imports under ``if TYPE_CHECKING:`` (what readers, editors and mypy see), and :func:`lazy_names`
reads that list from the package's source and imports the module of a name when the name is first asked for.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from . import (
        annotate,
        checker,
        data,
        decoding,
        errors,
        eval,
        generation,
        metrics,
        prompts,
        report,
        serving,
        settings,
        sweep,
        train,
    )


def lazy_names(package: str, init_file: str):
    """``__getattr__`` and ``__dir__`` (PEP 562) for ``package``: each name its ``__init__.py`` (``init_file``)
    imports under ``if TYPE_CHECKING:`` is imported from its module when it is first asked for."""
    homes: dict[str, tuple[str, str]] = {}  # name -> (module, the name in that module; "" for the module itself)
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    base = "." * statement.level + (statement.module or "")
                    for alias in statement.names:
                        if statement.module:
                            homes[alias.asname or alias.name] = (base, alias.name)
                        else:
                            homes[alias.asname or alias.name] = (base + alias.name, "")

    def __getattr__(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = homes[name]
        loaded = importlib.import_module(module, package)
        return getattr(loaded, attribute) if attribute else loaded

    def __dir__() -> list[str]:
        return sorted({*importlib.import_module(package).__dict__, *homes})

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_names(__name__, __file__)
