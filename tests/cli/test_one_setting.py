"""One decoding setting, from its flag to the logits: how many calls it passes through, and how often it is checked.

``faithkit generate --strategy pmi --alpha A`` runs in this process under :func:`sys.setprofile`. A *hop* is a
faithkit call that is given ``A`` as an argument (other than ``self``): the number itself, or an object it travels
in (the parsed flags, the strategy, a cell or a list of cells, a decode key), on the path from the command to the
PMI-DECODE multiply, i.e. on the call stack when the strategy is checked, when its processor is made and when the
multiply runs. The check and the multiply themselves use it (no hop), and methods that read their own object's
attribute are no hop: the object travels whole.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import pytest

from faithkit.settings import options as declarations
from faithkit.decoding.two_view.pmi_decode import PMIDecode

from .helpers import write_jsonl

ALPHA = 0.4375  # exact in binary, and no default of anything
MOST_HOPS = 8


def carries(value, depth: int = 3) -> bool:
    """Whether ``value`` is ALPHA or holds it within ``depth`` steps (attributes of flags and dataclasses, items)."""
    if isinstance(value, float):
        return value == ALPHA
    if depth == 0 or isinstance(value, (str, bytes, type)):
        return False
    if isinstance(value, argparse.Namespace):
        items = list(vars(value).values())
    elif dataclasses.is_dataclass(value):
        items = [getattr(value, field.name, None) for field in dataclasses.fields(value)]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, dict):
        items = list(value.values())
    else:
        return False
    return any(carries(item, depth - 1) for item in items)


def hop_name(frame) -> str | None:
    """``module.function`` when the frame is a faithkit call given ALPHA (not as ``self``), else None."""
    module = frame.f_globals.get("__name__", "")
    if not module.startswith("faithkit"):
        return None
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    names = [name for name in code.co_varnames[:count] if name not in ("self", "cls")]
    if not any(carries(frame.f_locals.get(name)) for name in names):
        return None
    if code.co_name == "__init__" and "self" in frame.f_locals:  # dataclasses make theirs: name the class
        made = type(frame.f_locals["self"])
        return f"{made.__module__}.{made.__qualname__}.__init__"
    return f"{module}.{code.co_qualname}"


def path_of(run_command) -> tuple[list[str], list[str]]:
    """``(hops, events)``: the hops on the stacks at the events, in the order first seen, and the events seen."""
    targets = {
        declarations.check.__code__: "checked",
        PMIDecode.__init__.__code__: "processor made",
        PMIDecode.of.__func__.__code__: "processor made",
        PMIDecode.combine.__code__: "multiplied",
    }
    hops: dict[str, None] = {}
    events: list[str] = []
    ENDPOINTS = (declarations.check.__code__, PMIDecode.combine.__code__)  # where alpha is used: no hop

    def profile(frame, event, arg):
        if event != "call" or frame.f_code not in targets:
            return
        if frame.f_code is declarations.check.__code__ and not carries(frame.f_locals.get("instance")):
            return  # another dataclass's check
        if not events or events[-1] != targets[frame.f_code]:
            events.append(targets[frame.f_code])
        stack, frame_code = [], frame.f_code
        while frame is not None:
            stack.append(frame)
            frame = frame.f_back
        for caller in reversed(stack[1:] if frame_code in ENDPOINTS else stack):
            name = hop_name(caller)
            if name is not None:
                hops.setdefault(name)

    sys.setprofile(profile)
    try:
        run_command()
    finally:
        sys.setprofile(None)
    return list(hops), events


@pytest.fixture()
def generate_argv(model_folder, tmp_path):
    rows = write_jsonl(tmp_path / "in.jsonl", [{"id": "r0", "knowledge": "The tower is tall.", "history": ["Is it?"]}])
    return ["generate", "--model", model_folder, "--input", rows, "--output", tmp_path / "out.jsonl"]


def test_alpha_reaches_the_multiply_in_at_most_eight_hops(faithkit, generate_argv):
    runs = []
    argv = [*generate_argv, "--strategy", "pmi", "--alpha", str(ALPHA), "--max-new-tokens", "2"]
    hops, events = path_of(lambda: runs.append(faithkit(*argv)))
    assert runs[0].code == 0, runs[0].err
    assert events[0] == "checked" and "processor made" in events and events[-1] == "multiplied"
    print(f"{len(hops)} hops:", " -> ".join(hops))
    assert len(hops) <= MOST_HOPS, f"{len(hops)} hops: " + " -> ".join(hops)
    assert (
        hops[0] == "faithkit.cli.generate.run"
        and hops[-1] == "faithkit.decoding.two_view.processor.TwoViewProcessor.of"
    )


def test_the_hop_count_sees_a_rebuilt_strategy(monkeypatch, faithkit, generate_argv):
    """The count can fail: a processor that rebuilds PMI() from the numbers adds the rebuild's calls."""
    from faithkit.decoding.two_view import strategies

    monkeypatch.setattr(strategies.PMI, "processors", lambda self, sampling=None: [PMIDecode(self.alpha, self.top_p)])
    argv = [*generate_argv, "--strategy", "pmi", "--alpha", str(ALPHA), "--max-new-tokens", "2"]
    hops, _ = path_of(lambda: faithkit(*argv))
    assert "faithkit.decoding.two_view.parameters.PMIParameters.__init__" in hops, hops and len(hops) > MOST_HOPS


def test_alpha_and_each_generation_option_are_checked_exactly_once(monkeypatch, faithkit, generate_argv):
    checked: dict[str, int] = {}
    real = declarations.refusal

    def counted(item, value):
        checked[item.name] = checked.get(item.name, 0) + 1
        return real(item, value)

    monkeypatch.setattr(declarations, "refusal", counted)
    argv = [*generate_argv, "--strategy", "pmi", "--alpha", str(ALPHA), "--max-new-tokens", "2"]
    assert faithkit(*argv).code == 0
    # alpha: by PMI's constructor alone (its flag parses a number: pmi and cad declare different ranges);
    # max_new_tokens: by its flag as it parses, then by the options' constructor; the others by the constructor;
    # strategy: by its flag's choices
    assert checked == {"alpha": 1, "top_p": 1, "max_new_tokens": 2, "strategy": 1, **dict.fromkeys(OTHER_OPTIONS, 1)}


OTHER_OPTIONS = (
    "num_beams",
    "num_return_sequences",
    "do_sample",
    "temperature",
    "top_k",
    "seed",
    "batch_size",
    "max_context_tokens",
    "chat",
)
