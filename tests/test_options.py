"""Options are declared once (faithkit.settings.options): every flag, config key and Python caller reads the one declaration.

Fast, no models: the parsers are walked, never run past their checks.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import typing
from pathlib import Path

import pytest

from faithkit.cli import build_parser, main
from faithkit.cli.shared_flags import JobFlags
from faithkit.data.rows import InputOptions
from faithkit.decoding import PMI, GenerationOptions, PMIDecode
from faithkit.decoding.strategies import STRATEGIES, strategy_from_dict
from faithkit.decoding.base import Strategy
from faithkit.errors import ConfigError
from faithkit.metrics.pmi_faith import PMIFaith
from faithkit.metrics.metric_options import MetricOptions
from faithkit.metrics.registry import METRICS
from faithkit.settings.options import base_type, declared_default, flag, flag_help, range_text
from faithkit.data.paths import PathArg
from faithkit.serving.precision import Placement
from faithkit.sweep import SweepConfig
from faithkit.train.config import SECTIONS

CONFIG_CLASSES = [
    GenerationOptions,
    *STRATEGIES.values(),
    SweepConfig,
    *SECTIONS.values(),
    MetricOptions,
    InputOptions,
    Placement,
]
DEMO_ROWS = str(Path(__file__).resolve().parents[1] / "examples" / "demo.jsonl")


def _leaf_parsers(parser, words=()):
    """(command words, parser) of every command that takes options, e.g. (("meta-eval", "begin"), …)."""
    commands = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not commands:
        yield words, parser
        return
    for name, subparser in commands[0].choices.items():
        yield from _leaf_parsers(subparser, (*words, name))


LEAVES = list(_leaf_parsers(build_parser()))


def _declarations():
    seen: set[int] = set()
    for cls in CONFIG_CLASSES:
        for item in dataclasses.fields(cls):
            if id(item) not in seen:  # a field inherited unchanged (faithful's from rerank) is one declaration
                seen.add(id(item))
                yield cls, item


def _instance_defaults() -> dict:
    """Defaults a class declares for a field holding another config (SweepConfig.generation: num_beams 4)."""
    shown: dict = {}
    for _, item in _declarations():
        if dataclasses.is_dataclass(item.default):
            for inner in dataclasses.fields(item.default):
                shown.setdefault(inner.name, []).append(getattr(item.default, inner.name))
    return shown


COMMAND_DEFAULTS = [JobFlags(chunk_size=size).chunk_size for size in (8, 16)] + ["q2"]
"""Defaults a command gives a shared declaration (``add_job_options(parser, chunk_size=8)``, ``--metric q2``)."""


def test_every_declared_flag_shows_its_declarations_help_and_default():
    instance_defaults = _instance_defaults()
    checked = 0
    for words, parser in LEAVES:
        for action in parser._actions:
            if not hasattr(action, "declared"):
                continue
            owners, default = action.declared
            joined = "; ".join(f"{cls.name}: {flag_help(item)}" for cls, item in owners if issubclass(cls, Strategy))
            if action.help != joined:
                [(cls, item)] = owners
                declared = [declared_default(item), *instance_defaults.get(item.name, []), *COMMAND_DEFAULTS]
                assert default in declared, (words, action.option_strings)
                assert action.help == flag_help(item, default), (words, action.option_strings)
                assert action.default in (default, None, argparse.SUPPRESS)
            else:  # a strategy parameter of generate: each strategy's declaration, unset its own default
                assert action.default is None
            checked += 1
    assert checked > 150  # every command's declared flags were seen


HOMONYMS = {("meta-eval", "q2-wow", "--threshold"): "the accuracy threshold; minimal-edit's threshold is no flag"}
"""Flags typed by hand that share a declared option's name but not its meaning, and why."""


def _is_mapping(cls, item) -> bool:
    """Mappings are set in files only: no flag."""
    return base_type(typing.get_type_hints(cls)[item.name]) is dict


def test_no_flag_of_a_declared_option_is_typed_by_hand():
    """A command that builds flags from a class builds all of that class's flags it has from it."""
    for words, parser in LEAVES:
        used = {
            cls: {flag(item.name) for item in dataclasses.fields(cls) if not _is_mapping(cls, item)}
            for action in parser._actions
            if hasattr(action, "declared")
            for cls, _ in action.declared[0]
        }
        for action in parser._actions:
            if hasattr(action, "declared"):
                continue
            for option_string in action.option_strings:
                owners = [cls.__name__ for cls, names in used.items() if option_string[2:] in names]
                if (*words, option_string) in HOMONYMS:
                    assert owners  # still a homonym
                    continue
                assert not owners, f"faithkit {' '.join(words)} {option_string} is typed by hand; {owners} declare it"


def test_help_texts_spell_no_default_or_range_by_hand():
    for cls, item in _declarations():
        text = item.metadata.get("help", "")
        assert not re.search(r"\(default [^:]", text), f"{cls.__name__}.{item.name}: {text}"
        if range_text(item):
            assert range_text(item) not in text, f"{cls.__name__}.{item.name}: {text}"


def test_a_name_declared_twice_is_one_declaration_or_a_copy_of_it():
    """Fields with the same name either mean different things (their own help) or are ``option_like`` copies, which
    keep the first's range; an exact copy of another help is not declared by hand."""
    by_help: dict = {}
    for cls, item in _declarations():
        if "like" in item.metadata:
            first_cls, first_name = item.metadata["like"].split(".")
            first = next(c for c in CONFIG_CLASSES if c.__name__ == first_cls)
            original = next(f for f in dataclasses.fields(first) if f.name == first_name)
            assert range_text(item) == range_text(original) and item.name == first_name
            continue
        key = (item.name, item.metadata.get("help"))
        assert key not in by_help, f"{cls.__name__}.{item.name} repeats {by_help[key]}.{item.name}: use option_like"
        by_help[key] = cls.__name__


def test_metric_constructors_default_to_the_declared_options():
    import inspect

    for spec in METRICS.values():
        parameters = inspect.signature(spec.build.target()).parameters
        for name in spec.options:
            declared = declared_default(next(f for f in dataclasses.fields(MetricOptions) if f.name == name))
            if name in parameters and declared is not None:
                assert parameters[name].default == declared, (spec.name, name)


# ---- one message for one mistake ------------------------------------------------------------------------------
def _required_arguments(parser, tmp_path) -> list[str]:
    """Values for a command's required options that pass their checks, so the flag under test is what fails."""
    argv = []
    for action in parser._actions:
        if action.required and action.option_strings:
            kind = action.type.kind if isinstance(action.type, PathArg) else None
            value = {"rows": DEMO_ROWS, "text": DEMO_ROWS, "model": "m"}.get(kind, str(tmp_path / "out"))
            argv += [action.option_strings[0], value]
    return argv


BAD_VALUES = {
    "--batch-size": ("0", lambda: GenerationOptions(batch_size=0).validate(), "batch_size"),
    "--alpha": ("2", lambda: PMI(alpha=2), "alpha"),
    "--max-new-tokens": ("-1", lambda: GenerationOptions(max_new_tokens=-1).validate(), "max_new_tokens"),
    "--top-p": ("0", lambda: PMIDecode(alpha=0.25, top_p=0), "top_p"),
}


@pytest.mark.parametrize("flag_name", list(BAD_VALUES))
def test_a_bad_value_says_the_same_from_every_command(flag_name, tmp_path, capsys):
    bad, python_call, parameter = BAD_VALUES[flag_name]
    with pytest.raises(ValueError) as from_python:
        python_call()
    reason = str(from_python.value).removeprefix(f"{parameter} ")
    assert reason != str(from_python.value)  # the Python caller is told the parameter
    commands = [(words, parser) for words, parser in LEAVES if flag_name in parser._option_string_actions]
    assert len(commands) >= 2
    for words, parser in commands:
        with pytest.raises(SystemExit) as stopped:  # checked as it parses, or (--alpha of generate) right after
            raise SystemExit(main([*words, flag_name, bad, *_required_arguments(parser, tmp_path)]))
        assert stopped.value.code == 2
        said = capsys.readouterr().err
        assert said == f"error: faithkit {' '.join(words)}: argument {flag_name}: {reason}\n", words


def test_python_callers_are_told_the_parameter():
    alpha = "alpha must be in [0, 1], got 2 (0 = plain decoding, 1 = rank by PMI alone)"
    for call in (lambda: PMI(alpha=2), lambda: PMIDecode(alpha=2, top_p=0.6)):
        with pytest.raises(ConfigError) as raised:
            call()
        assert str(raised.value) == alpha and isinstance(raised.value, ValueError)
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1, got 0$"):
        GenerationOptions(batch_size=0).validate()
    with pytest.raises(ValueError, match=r"^batch_size must be at least 1, got 0$"):
        PMIFaith(model="no-such-model", batch_size=0)  # refused before the model loads
    takes_batches = [spec for spec in METRICS.values() if "batch_size" in spec.options]
    assert len(takes_batches) >= 5
    for spec in takes_batches:
        with pytest.raises(ConfigError, match=r"^batch_size must be at least 1, got 0$"):
            spec.build(batch_size=0)


def test_config_files_name_the_key(tmp_path):
    from faithkit.sweep import load_config as load_sweep
    from faithkit.train import load_config as load_training

    training = tmp_path / "train.yaml"
    training.write_text("model: m\ndata: {corpus: topicalchat}\ntraining: {batch_size: 0}\n")
    with pytest.raises(
        ConfigError, match=rf"^config file {re.escape(str(training))}: training.batch_size must be at least 1, got 0$"
    ):
        load_training(training)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("generator: g\ninput: x\nout: o\nstrategies: [plain, {name: pmi, alpha: [2]}]\n")
    with pytest.raises(
        ConfigError,
        match=r"^config file .*sweep.yaml: strategies\[1\]: pmi: alpha must be in \[0, 1\], got 2 \(0 = plain",
    ):
        load_sweep(sweep)


def test_every_config_says_an_unknown_key_alike(tmp_path):
    """One message for a key no config takes: the file, the key, the closest name and the accepted keys."""
    from faithkit.sweep import load_config as load_sweep
    from faithkit.sweep.config import GENERATION
    from faithkit.train import load_config as load_training
    from faithkit.train.config import EvaluationSection

    training = tmp_path / "train.yaml"
    training.write_text("model: m\ndata: {corpus: topicalchat}\nevaluation: {eval_step: 5}\n")
    evaluation = ", ".join(f"evaluation.{item.name}" for item in dataclasses.fields(EvaluationSection))
    with pytest.raises(ConfigError) as trained:
        load_training(training)
    assert str(trained.value) == (
        f"config file {training}: unknown key 'evaluation.eval_step' (did you mean 'evaluation.eval_steps'?); "
        f"the accepted keys are {evaluation}"
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("generator: g\ninput: x\nout: o\ntop_pp: 0.6\n")
    keys = [item.name for item in dataclasses.fields(SweepConfig) if item.name != "generation"] + list(GENERATION)
    with pytest.raises(ConfigError) as swept:
        load_sweep(sweep)
    assert str(swept.value) == (
        f"config file {sweep}: unknown key 'top_pp' (did you mean 'top_p'?); the accepted keys are {', '.join(keys)}"
    )
    with pytest.raises(ConfigError, match=r"^pmi: unknown key 'beta'; the accepted keys are alpha, top_p$"):
        strategy_from_dict({"name": "pmi", "beta": 1})
