"""``faithkit checker data|train``: rebuild the claim checker's training data and its LoRA adapter.

Both read one recipe file (``configs/checker/smollm2.yaml``: a ``data:`` and a ``training:`` section);
flags override its keys. The adapter that ships with faithkit was made by exactly these two commands.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..data.files import output_folder, to_json
from ..settings.options import option


@dataclass
class DataRecipe:
    config: str | None = option(None, "recipe YAML; its 'data:' section")


@dataclass
class TrainingRecipe:
    config: str | None = option(None, "recipe YAML; its 'training:' section")


RECIPE_FILES = {"data": DataRecipe, "train": TrainingRecipe}
"""Each action's ``--config``: the recipe file whose section its flags override."""

SECTIONS = ("data", "training")
"""A recipe file's sections (``checker data`` reads the first, ``checker train`` the second); no other is taken: a
misspelled one would leave its action on the defaults."""


def _recipe_class(section: str):
    from ..checker.synthetic import CheckerData
    from ..checker.training import CheckerTraining

    return CheckerData if section == "data" else CheckerTraining


def register(subparsers) -> None:
    from ..checker.synthetic import CheckerData
    from ..checker.training import CheckerTraining
    from ..settings.options import add_flags
    from .declared_files import Files, Output, declare_files

    parser = subparsers.add_parser(
        "checker",
        help="make the claim checker's training data and train its adapter",
        description="Rebuild faithkit's offline claim checker (metric faithkit-checker): 'data' makes synthetic "
        "supported / generic / unsupported examples from Topical-Chat, 'train' fine-tunes a LoRA adapter on them.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, cls, helptext, run in (
        ("data", CheckerData, "write train.jsonl, test.jsonl and a data card", run_data),
        ("train", CheckerTraining, "fine-tune the adapter (resumes a stopped run)", run_train),
    ):
        action = actions.add_parser(name, help=helptext, description=helptext)
        add_flags(action, RECIPE_FILES[name])
        add_flags(action, cls, unset=argparse.SUPPRESS)
        action.set_defaults(run=run, recipe=cls)
        declare_files(
            action, Files(reads=_reads, writes=lambda args: [Output("--output", _resolved(args).output, folder=True)])
        )


def _resolved(args):
    return _recipe(args, "data" if args.action == "data" else "training")


def _reads(args) -> list:
    """The recipe file and what the recipe reads: the corpus folder (data) or the model and the examples (train)."""
    from ..data import data_root

    recipe = _resolved(args)
    if args.action == "data":
        return [args.config, recipe.topicalchat or data_root() / "topicalchat", *recipe.rated]
    return [args.config, recipe.model, recipe.data]


def _recipe(args, section: str):
    from ..settings.configfile import read_yaml
    from ..errors import ConfigError
    from ..settings.options import check_paths, from_mapping, reject_unknown

    values: dict = {}
    if args.config:
        where = f"config file {args.config}: "
        document = read_yaml(args.config) or {}
        if not isinstance(document, dict):
            raise ConfigError(f"{where}expected a mapping with a 'data:' and a 'training:' section")
        reject_unknown(document, SECTIONS, where, what="section")
        for name, keys in document.items():  # both sections' keys, whichever action reads the file
            if not isinstance(keys, dict | None):
                raise ConfigError(f"{where}'{name}:' must be a mapping of keys, got {keys!r}")
            reject_unknown(keys or {}, _recipe_class(name).__dataclass_fields__, where, f"{name}.")
        values.update(document.get(section) or {})
    names = {field for field in args.recipe.__dataclass_fields__}
    values.update({key: value for key, value in vars(args).items() if key in names})
    where, prefix = (f"config file {args.config}: ", f"{section}.") if args.config else ("", "")
    recipe = from_mapping(args.recipe, values, where, prefix)
    check_paths(recipe, where, prefix)
    return recipe


def run_data(args) -> int:
    from ..checker.synthetic import build_from_corpora

    recipe = _recipe(args, "data")
    with output_folder(recipe.output, "--output"):
        print(to_json(build_from_corpora(recipe)))
    return 0


def run_train(args) -> int:
    from ..checker.training import train

    recipe = _recipe(args, "training")
    with output_folder(recipe.output, "--output"):
        print(to_json(train(recipe)))
    return 0
