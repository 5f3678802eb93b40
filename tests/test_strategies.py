"""Decoding strategies: every strategy, under every search it supports, against a slow reference on tiny GPT-2 and BART.

The reference decodes one context at a time and recomputes both views with full, uncached,
unpadded forward passes at every step; its scores are each paper's formula written out here
again, independently of the processors.
"""

import dataclasses
import importlib
import inspect
import sys
import math
from pathlib import Path

import pytest
import torch
from transformers import TopPLogitsWarper

from faithkit.cli import build_parser, main
from faithkit.cli.generate import checked_options
from faithkit.decoding import (
    CAD,
    PMI,
    STRATEGIES,
    AdaCAD,
    AdaptiveContextAwareDecode,
    Cell,
    ContextAwareDecode,
    GenerationOptions,
    PMIDecode,
    Plain,
    build_inputs,
    generate,
    generate_grid,
    strategy_from_dict,
)
from faithkit.decoding.base import parameter_text
from faithkit.decoding.strategies import strategy_from_args
from faithkit.settings.options import default_grid, range_text
from faithkit.errors import ConfigError
from faithkit.prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE
from tests.test_pmi_decode import (  # noqa: F401  (fixtures)
    DOCUMENTS,
    HISTORIES,
    next_logprobs,
    one_thread,
    tiny,
    view_ids,
)

STEPS = 5


# ---- each paper's next-token scores, from the two views' log-probabilities ------------------------
def reference_scores(strategy, lp_c, lp_h):
    if isinstance(strategy, Plain):
        return lp_c
    if isinstance(strategy, PMI):
        in_set = torch.isfinite(TopPLogitsWarper(strategy.top_p)(None, lp_c[None]))[0]
        return torch.where(in_set, strategy.alpha * (lp_c - lp_h) + (1 - strategy.alpha) * lp_c, -math.inf)
    if isinstance(strategy, CAD):
        alpha = strategy.alpha
    else:  # AdaCAD: alpha = JSD(p || q) in nats, computed in float64
        p, q = lp_c.double().exp(), lp_h.double().exp()
        m = (p + q) / 2
        alpha = float(0.5 * (p * (p.log() - m.log())).sum() + 0.5 * (q * (q.log() - m.log())).sum())
    return (1 + alpha) * lp_c - alpha * lp_h


class Reference:
    """One context's scores recomputed from scratch for any generated prefix (memoised: beams share prefixes)."""

    def __init__(self, model, tokenizer, template, strategy, document, history):
        self.model, self.strategy = model, strategy
        self.views = (
            view_ids(model, tokenizer, template, document, history),
            view_ids(model, tokenizer, template, None, history),
        )
        self.seen = {}

    def __call__(self, generated):
        key = tuple(generated)
        if key not in self.seen:
            lp_c, lp_h = (next_logprobs(self.model, view, list(generated)) for view in self.views)
            self.seen[key] = reference_scores(self.strategy, lp_c, lp_h)
        return self.seen[key]


class ReferenceProcessor:
    """For a plain B-row generate: replaces every row's scores by its context's reference scores."""

    def __init__(self, references, copies, width):
        self.references, self.copies, self.width = references, copies, width

    def __call__(self, input_ids, scores):
        return torch.stack(
            [
                self.references[row // self.copies](input_ids[row, self.width :].tolist())
                for row in range(input_ids.shape[0])
            ]
        )


def references(model, tokenizer, strategy, documents=DOCUMENTS, histories=HISTORIES, template=DEFAULT_TEMPLATE):
    return [Reference(model, tokenizer, template, strategy, d, h) for d, h in zip(documents, histories)]


def warp(scores, temperature, top_k):
    scores = scores / temperature
    kth = scores.topk(top_k).values[-1]
    return scores.masked_fill(scores < kth, -math.inf)


def reference_decode(model, reference, steps, seed=None, temperature=1.0, top_k=None):
    """Greedy (or, with a seed, sampling from the warped scores with the context's own generator) for one context."""
    eos = model.generation_config.eos_token_id
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    generated, step_scores = [], []
    for _ in range(steps):
        scores = reference(generated)
        step_scores.append(scores)
        if generator is None:
            token = int(scores.argmax())
        else:
            probs = torch.softmax(warp(scores, temperature, top_k or scores.shape[-1]), dim=-1)
            token = int(torch.multinomial(probs, 1, generator=generator))
        generated.append(token)
        if token == eos:
            break
    return generated, step_scores


def texts(tokenizer, token_lists):
    return [tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in token_lists]


def new_tokens(model, sequences, inputs):
    start = 1 if model.config.is_encoder_decoder else inputs["input_ids"].shape[1]
    return sequences[:, start:]


def until_eos(tokens, eos, pad=None):
    tokens = list(tokens)
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens


STRATEGY_CASES = [Plain(), PMI(0.25, 0.6), PMI(1.0, 0.9), CAD(0.5), CAD(2.0), AdaCAD()]


# ---- exactness: greedy, within 1e-5 at every step ---------------------------------------------------
@pytest.mark.parametrize("strategy", STRATEGY_CASES, ids=lambda s: s.label)
def test_greedy_scores_match_the_slow_reference(tiny, strategy):
    model, tokenizer = tiny
    inputs = build_inputs(model, tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE, views=strategy.views)
    out = model.generate(
        **inputs,
        max_new_tokens=STEPS,
        logits_processor=strategy.processors(),
        pad_token_id=tokenizer.pad_token_id,
        output_scores=True,
        return_dict_in_generate=True,
    )
    eos = model.generation_config.eos_token_id
    got = new_tokens(model, out.sequences, inputs)
    for context, reference in enumerate(references(model, tokenizer, strategy)):
        tokens, step_scores = reference_decode(model, reference, STEPS)
        assert until_eos(got[context].tolist(), eos) == tokens
        for step, expected in enumerate(step_scores):
            produced = (
                out.scores[step][context] if strategy.views == 2 else torch.log_softmax(out.scores[step][context], -1)
            )
            finite = torch.isfinite(expected)
            both = finite & torch.isfinite(produced)
            assert torch.allclose(produced[both], expected[both], atol=1e-5, rtol=0)
            # a flat random model's nucleus holds thousands of near-equal tokens: batching may move its edge a little
            assert (torch.isfinite(produced) != finite).sum() <= 5
    if strategy.views == 2:  # the history-only half followed the same tokens
        assert torch.equal(got[:3], got[3:])
    # faithkit's own path (sorted batches, prefilled prompts) gives the reference's texts
    grid = generate_grid(
        model,
        tokenizer,
        DOCUMENTS,
        HISTORIES,
        [strategy],
        template=DEFAULT_TEMPLATE,
        batch_size=2,
        max_new_tokens=STEPS,
    )
    assert grid[0] == texts(
        tokenizer, [reference_decode(model, r, STEPS)[0] for r in references(model, tokenizer, strategy)]
    )


# ---- beam search: the same beams and sequence scores within 1e-5 ------------------------------------
@pytest.mark.parametrize("strategy", STRATEGY_CASES, ids=lambda s: s.label)
def test_beam_search_matches_the_slow_reference(tiny, strategy):
    model, tokenizer = tiny
    beams = {
        "num_beams": 3,
        "num_return_sequences": 2,
        "max_new_tokens": 4,
        "pad_token_id": tokenizer.pad_token_id,
        "output_scores": True,
        "return_dict_in_generate": True,
    }
    inputs = build_inputs(model, tokenizer, DOCUMENTS[:2], HISTORIES[:2], DEFAULT_TEMPLATE, views=strategy.views)
    out = model.generate(**inputs, logits_processor=strategy.processors(), **beams)
    plain = build_inputs(model, tokenizer, DOCUMENTS[:2], HISTORIES[:2], DEFAULT_TEMPLATE, views=1)
    width = 1 if model.config.is_encoder_decoder else plain["input_ids"].shape[1]
    processor = ReferenceProcessor(references(model, tokenizer, strategy, DOCUMENTS[:2], HISTORIES[:2]), 3, width)
    expected = model.generate(**plain, logits_processor=[processor], **beams)
    got = new_tokens(model, out.sequences, inputs)
    assert torch.equal(got[:4], new_tokens(model, expected.sequences, plain))
    assert torch.allclose(out.sequences_scores[:4], expected.sequences_scores, atol=1e-5, rtol=0)
    if strategy.views == 2:
        assert torch.equal(got[:4], got[4:])
    grid = generate_grid(
        model,
        tokenizer,
        DOCUMENTS[:2],
        HISTORIES[:2],
        [(strategy, "beam")],
        template=DEFAULT_TEMPLATE,
        num_beams=3,
        num_return_sequences=2,
        max_new_tokens=4,
    )
    eos = model.generation_config.eos_token_id
    pad = tokenizer.pad_token_id
    reference_texts = texts(
        tokenizer,
        [
            [t for t in until_eos(row.tolist(), eos) if t != pad or t == eos]
            for row in new_tokens(model, expected.sequences, plain)
        ],
    )
    assert grid[0] == [reference_texts[0:2], reference_texts[2:4]]


# ---- sampling: each context from its own generator, the same draws as the reference's ----------------
@pytest.mark.parametrize("strategy", STRATEGY_CASES, ids=lambda s: s.label)
def test_seeded_sampling_matches_the_slow_reference(tiny, strategy):
    model, tokenizer = tiny
    seeds, temperature, top_k = [5, 6, 7], 1.3, 40
    grid = generate_grid(
        model,
        tokenizer,
        DOCUMENTS,
        HISTORIES,
        [(strategy, "sample")],
        template=DEFAULT_TEMPLATE,
        seeds=seeds,
        temperature=temperature,
        top_k=top_k,
        max_new_tokens=STEPS,
        batch_size=2,
    )
    expected = [
        reference_decode(model, reference, STEPS, seed, temperature, top_k)[0]
        for reference, seed in zip(references(model, tokenizer, strategy), seeds)
    ]
    assert grid[0] == texts(tokenizer, expected)
    greedy = [reference_decode(model, reference, STEPS)[0] for reference in references(model, tokenizer, strategy)]
    assert expected != greedy  # it did sample


def test_plain_beam_sampling_is_transformers_own_per_seeded_context(tiny):
    model, tokenizer = tiny
    seeds = [1, 2, 3]
    options = {"template": DEFAULT_TEMPLATE, "num_beams": 3, "max_new_tokens": STEPS, "temperature": 1.5}
    grid = generate_grid(
        model, tokenizer, DOCUMENTS, HISTORIES, [(Plain(), "beam_sample")], seeds=seeds, batch_size=3, **options
    )
    expected = []
    for context, seed in enumerate(seeds):
        one = build_inputs(
            model,
            tokenizer,
            DOCUMENTS[context : context + 1],
            HISTORIES[context : context + 1],
            DEFAULT_TEMPLATE,
            views=1,
        )
        torch.manual_seed(seed)
        out = model.generate(
            **one,
            do_sample=True,
            num_beams=3,
            temperature=1.5,
            top_k=0,
            max_new_tokens=STEPS,
            pad_token_id=tokenizer.pad_token_id,
        )
        expected.append(texts(tokenizer, new_tokens(model, out, one).tolist())[0])
    assert grid[0] == expected
    # the batch a context lands in changes nothing
    alone = generate_grid(
        model, tokenizer, DOCUMENTS[1:2], HISTORIES[1:2], [(Plain(), "beam_sample")], seeds=[2], **options
    )
    assert alone[0] == grid[0][1:2]
    assert (
        generate_grid(
            model, tokenizer, DOCUMENTS, HISTORIES, [(Plain(), "beam_sample")], seeds=seeds, batch_size=1, **options
        )
        == grid
    )


# ---- identities -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_greedy_and_beam_cad_equal_pmi_decode_at_alpha_over_one_plus_alpha(tiny, search):
    model, tokenizer = tiny
    options = {"template": DEFAULT_TEMPLATE, "num_beams": 3, "max_new_tokens": 6}
    grid = generate_grid(
        model,
        tokenizer,
        DOCUMENTS,
        HISTORIES,
        [(CAD(1.0), search), (PMI(0.5, 1.0), search), (CAD(3.0), search), (PMI(0.75, 1.0), search), (Plain(), search)],
        **options,
    )
    assert grid[0] == grid[1] and grid[2] == grid[3]
    if not model.config.is_encoder_decoder:  # (the tiny BART repeats one word whatever the strategy)
        assert grid[0] != grid[4] or grid[2] != grid[4]  # and they are not plain decoding


def test_cells_that_decode_alike_run_once(tiny_gpt2, gpt2_tokenizer, monkeypatch):
    from faithkit.decoding.grid_plan import CellRun

    module = importlib.import_module("faithkit.decoding.grid")
    calls = []
    real, real_jointly = CellRun.generate, module.decode_jointly
    monkeypatch.setattr(CellRun, "generate", lambda run, *a: calls.append(run.cell) or real(run, *a))
    monkeypatch.setattr(  # the greedy decodes of equal prompt width go through one generate call
        module,
        "decode_jointly",
        lambda model, batch, runs, *a: calls.extend(run.cell for run in runs) or real_jointly(model, batch, runs, *a),
    )
    cells = [
        Cell(Plain()),
        Cell(PMI(0.0, 0.6)),
        Cell(CAD(0.0)),
        Cell(PMI(0.0, 1.0), "beam"),
        Cell(Plain(), "beam"),
        Cell(PMI(0.0, 0.6), "beam"),
        Cell(PMI(0.5, 0.6)),
    ]
    grid = generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, cells, num_beams=3, max_new_tokens=4)
    # plain greedy x3, plain beam x2, PMI alpha 0 top_p 0.6 under beam (a beam may not leave the top-p set), PMI 0.5
    assert calls == [Cell(Plain()), Cell(PMI(0.5, 0.6)), Cell(Plain(), "beam"), Cell(PMI(0.0, 0.6), "beam")]
    assert grid[0] == grid[1] == grid[2] and grid[3] == grid[4]
    # and the shared decode is each cell's own
    assert grid[1] == generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, PMI(0.0, 0.6), max_new_tokens=4)
    assert grid[3] == generate(
        tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, PMI(0.0, 1.0), num_beams=3, max_new_tokens=4
    )


def test_a_joint_decode_takes_the_rows_whose_cache_fits_its_budget(tiny_gpt2):
    from faithkit.decoding.joint import JOINT_CACHE_BYTES, cache_bytes_per_token, joint_row_budget

    config = tiny_gpt2.config  # GPT-2: one key and one value per head and layer, float32
    per_token = 2 * config.n_layer * config.n_head * (config.n_embd // config.n_head) * 4
    assert cache_bytes_per_token(tiny_gpt2) == per_token
    assert joint_row_budget(tiny_gpt2, 100) == JOINT_CACHE_BYTES // (per_token * 100)
    assert joint_row_budget(tiny_gpt2, 10**12) == 1  # a row alone always decodes


@pytest.mark.parametrize("joint_rows", [64, 8])
def test_joint_greedy_decodes_hold_at_most_their_row_budget(tiny_gpt2, gpt2_tokenizer, monkeypatch, joint_rows):
    """The greedy cells of a batch go through generate together, at most the rows whose cache fits the budget in a
    call (a run alone may hold more), and each cell's texts are its own decode's."""
    monkeypatch.setattr(importlib.import_module("faithkit.decoding.joint"), "joint_row_budget", lambda m, n: joint_rows)
    module = importlib.import_module("faithkit.decoding.grid")
    rows = []
    real = module.decode_jointly
    monkeypatch.setattr(
        module,
        "decode_jointly",
        lambda model, batch, runs, *a: (
            rows.append(sum(batch.contexts * r.views for r in runs)) or real(model, batch, runs, *a)
        ),
    )
    cells = [Cell(Plain()), Cell(PMI(0.5, 0.6)), Cell(CAD(1.0)), Cell(AdaCAD())]  # 2 + 4 + 4 + 4 rows a batch
    options = {"template": DEFAULT_TEMPLATE, "max_new_tokens": 4, "batch_size": 2}
    grid = generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS[:2], HISTORIES[:2], cells, **options)
    assert rows == ([14] if joint_rows == 64 else [6, 8])  # one call; or plain + PMI, then CAD + AdaCAD (8 rows)
    for cell, responses in zip(cells, grid):
        assert responses == generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS[:2], HISTORIES[:2], cell.strategy, **options)


def test_a_mixed_grid_equals_each_cell_alone(tiny):
    """Every strategy and search in one grid: the same texts as one generate call per cell."""
    model, tokenizer = tiny
    cells = [
        Cell(Plain()),
        Cell(Plain(), "beam"),
        Cell(Plain(), "sample"),
        Cell(Plain(), "beam_sample"),
        Cell(PMI(0.25, 0.6), "sample"),
        Cell(CAD(1.0), "beam"),
        Cell(AdaCAD()),
    ]
    options = {
        "template": DEFAULT_TEMPLATE,
        "max_new_tokens": 4,
        "batch_size": 2,
        "seeds": [3, 4, 5],
        "temperature": 1.2,
    }
    grid = generate_grid(model, tokenizer, DOCUMENTS, HISTORIES, cells, num_beams=2, **options)
    for cell, responses in zip(cells, grid):
        search = {
            "beam": {"num_beams": 2},
            "sample": {"do_sample": True},
            "beam_sample": {"do_sample": True, "num_beams": 2},
        }.get(cell.search, {})
        kwargs = (
            options
            if "sample" in cell.search
            else {k: v for k, v in options.items() if k not in ("seeds", "temperature")}
        )
        assert responses == generate(model, tokenizer, DOCUMENTS, HISTORIES, cell.strategy, **kwargs, **search)


def test_prefill_is_shared_and_history_only_views_only_for_two_view_cells(tiny_gpt2, gpt2_tokenizer, monkeypatch):
    module = importlib.import_module("faithkit.decoding.prefill")
    blocks = []
    real = module.prefill_blocks
    monkeypatch.setattr(
        module, "prefill_blocks", lambda model, inputs, groups=2: blocks.append(groups) or real(model, inputs, groups)
    )
    plain_cells = [Cell(Plain()), Cell(Plain(), "beam")]
    generate_grid(
        tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, plain_cells, num_beams=2, batch_size=2, max_new_tokens=3
    )
    assert blocks == [1, 1]  # two batches, the conditioned views only
    blocks.clear()
    generate_grid(
        tiny_gpt2,
        gpt2_tokenizer,
        DOCUMENTS,
        HISTORIES,
        plain_cells + [Cell(CAD(1.0)), Cell(AdaCAD())],
        num_beams=2,
        batch_size=2,
        max_new_tokens=3,
    )
    assert blocks == [2, 2]  # once per batch for all four cells


def test_pmi_parameters_as_keywords_are_refused_with_the_strategy_spelling(tiny_gpt2, gpt2_tokenizer):
    options = {"template": DEFAULT_TEMPLATE, "max_new_tokens": 3}
    spelling = (
        r"alpha=, top_p=: a strategy holds its parameters, e.g. generate\(model, tokenizer, documents, histories, "
        r"PMI\(alpha=0.25, top_p=0.6\)\) or, in a grid, Cell\(PMI\(alpha=0.25, top_p=0.6\), 'greedy'\)"
    )
    with pytest.raises(ConfigError, match=spelling):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, alpha=0.5, top_p=0.9, **options)
    with pytest.raises(ConfigError, match=r"^alpha=: a strategy holds its parameters"):
        generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, [Cell(Plain())], alpha=0.5, **options)


# ---- search support -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["pmi", "cad", "adacad"])
def test_two_view_strategies_refuse_beam_sampling_clearly(tiny_gpt2, gpt2_tokenizer, name):
    with pytest.raises(ConfigError, match=f"strategy {name} does not support beam_sample search .*history-only"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, name, do_sample=True, num_beams=2)
    assert STRATEGIES["plain"].searches == ("greedy", "beam", "sample", "beam_sample")


@pytest.mark.parametrize(
    "processor", [PMIDecode(), ContextAwareDecode(), AdaptiveContextAwareDecode()], ids=lambda p: type(p).__name__
)
def test_generate_sampling_every_row_itself_is_caught(tiny_gpt2, gpt2_tokenizer, processor):
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    torch.manual_seed(0)
    with pytest.raises(
        RuntimeError, match=r"generate sampled each row independently: for sampling pass do_sample=True"
    ):
        tiny_gpt2.generate(
            **inputs,
            do_sample=True,
            max_new_tokens=8,
            logits_processor=[processor],
            pad_token_id=gpt2_tokenizer.pad_token_id,
        )


def test_cad_and_adacad_give_no_nan_for_tokens_banned_in_either_half():
    ninf = -math.inf
    conditioned = torch.tensor([[2.0, 1.0, ninf, 0.5], [ninf, 3.0, 1.0, 0.0]])
    history_only = torch.tensor([[1.0, ninf, ninf, 0.5], [ninf, ninf, ninf, 0.0]])
    scores = torch.cat([conditioned, history_only])
    for processor in (ContextAwareDecode(1.0), AdaptiveContextAwareDecode()):
        out = processor(torch.zeros(4, 3, dtype=torch.long), scores)
        assert not torch.isnan(out).any() and torch.equal(out[:2], out[2:])
        assert (out[0, [1, 2]] == ninf).all() and torch.isfinite(out[0, [0, 3]]).all()
        assert (out[1, [0, 1, 2]] == ninf).all() and torch.isfinite(out[1, 3])


def test_adacad_alpha_is_the_jensen_shannon_divergence():
    torch.manual_seed(0)
    scores = torch.randn(4, 30)
    out = AdaptiveContextAwareDecode()(torch.zeros(4, 1, dtype=torch.long), scores)
    lp = torch.log_softmax(scores, -1)
    for row in range(2):
        expected = reference_scores(AdaCAD(), lp[row], lp[row + 2])
        assert torch.allclose(out[row], expected, atol=1e-5)
    same = AdaptiveContextAwareDecode()(torch.zeros(2, 1, dtype=torch.long), scores[:1].repeat(2, 1))
    assert torch.allclose(same[0], lp[0], atol=1e-6)  # identical views: JSD 0, plain decoding


# ---- options declared once: dataclasses, command line, YAML and processors agree ---------------------------------
DEMO_ROWS = str(Path(__file__).resolve().parents[1] / "examples" / "demo.jsonl")  # an input the path check accepts


def decoding_from_args(args):
    """What ``faithkit generate`` makes of its decoding flags: the strategy, then the options checked against it."""
    strategy = strategy_from_args(args.strategy, args)
    return strategy, checked_options(args, strategy)


def parse_generate(*flags):
    return build_parser().parse_args(["generate", "--model", "m", "--input", DEMO_ROWS, "--output", "o", *flags])


def test_command_line_flags_are_the_dataclass_fields():
    parser = build_parser()
    generate_parser = next(
        a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith("generate")
    )
    actions = {action.dest: action for action in generate_parser._actions}
    for item in dataclasses.fields(GenerationOptions):
        assert actions[item.name].default == item.default
        assert actions[item.name].option_strings[0] == f"--{item.name.replace('_', '-')}"
        assert item.metadata["help"] in actions[item.name].help
    for cls in STRATEGIES.values():
        for item in dataclasses.fields(cls):
            assert actions[item.name].default is None  # unset: the strategy's own default
            assert f"{cls.name}: {item.metadata['help']}" in actions[item.name].help
            if item.default != "":  # an empty default shows none: the help says what empty means
                assert f"(default {parameter_text(item.default)})" in actions[item.name].help
    assert sorted(actions["strategy"].type.choices) == sorted(STRATEGIES)  # checked by its declared type


@pytest.mark.parametrize("cls", list(STRATEGIES.values()), ids=lambda c: c.name)
def test_defaults_and_ranges_agree_everywhere(cls, capsys):
    defaults = cls()
    cli_strategy, options = decoding_from_args(parse_generate("--strategy", cls.name))
    assert cli_strategy == defaults == strategy_from_dict({"name": cls.name}) == strategy_from_dict(cls.name)
    assert options == GenerationOptions()
    for item in dataclasses.fields(cls):
        grid = default_grid(cls)[item.name]
        for value in grid:  # every grid value is a valid setting, from YAML (text too) and the command line
            from_yaml = strategy_from_dict({"name": cls.name, item.name: str(value)})
            from_cli, _ = decoding_from_args(
                parse_generate("--strategy", cls.name, f"--{item.name.replace('_', '-')}", str(value))
            )
            assert getattr(from_yaml, item.name) == getattr(from_cli, item.name) == value
        if isinstance(item.default, str):  # a name, not a number: rerank's own checks (tests/test_rerank.py)
            continue
        bad = (item.metadata["high"] or 0) + 1 if item.metadata["high"] is not None else item.metadata["low"] - 1
        with pytest.raises(ConfigError) as from_yaml:
            strategy_from_dict({"name": cls.name, item.name: bad})
        flag = f"--{item.name.replace('_', '-')}"
        with pytest.raises(SystemExit) as stopped:  # a flag checked as it parses, or after (--alpha: the strategy's)
            sys.exit(
                main(
                    [
                        "generate",
                        "--model",
                        "m",
                        "--input",
                        DEMO_ROWS,
                        "--output",
                        "o",
                        "--strategy",
                        cls.name,
                        flag,
                        str(bad),
                    ]
                )
            )
        assert stopped.value.code == 2
        said = capsys.readouterr().err.strip()
        reason = str(from_yaml.value).removeprefix(f"{cls.name}: {item.name} ")
        assert f"must be {range_text(item)}" in reason or f"must be in {range_text(item)}" in reason
        assert said == f"error: faithkit generate: argument {flag}: {reason}"


def test_processors_take_their_defaults_and_checks_from_the_strategies():
    assert inspect.signature(PMIDecode).parameters["alpha"].default == PMI().alpha
    assert inspect.signature(PMIDecode).parameters["top_p"].default == PMI().top_p
    assert inspect.signature(ContextAwareDecode).parameters["alpha"].default == CAD().alpha
    with pytest.raises(ConfigError, match=r"^top_p must be in \(0, 1\], got 0 \(1 keeps every token\)$"):
        PMIDecode(top_p=0)
    with pytest.raises(ConfigError, match="^alpha must be at least 0, got -1 "):
        ContextAwareDecode(alpha=-1)


def test_training_hooks_use_the_same_declarations():
    from faithkit.train.config import EvaluationSection, evaluation_decoders

    evaluation = EvaluationSection()
    assert evaluation.max_new_tokens == GenerationOptions().max_new_tokens
    assert list(evaluation_decoders(evaluation).values()) == [Plain(), PMI()]


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--top-p", "0.5", "--strategy", "cad"],
            "--top-p does not apply to --strategy cad; its parameters are --alpha",
        ),
        (
            ["--alpha", "1", "--strategy", "adacad"],
            "--alpha does not apply to --strategy adacad; its parameters are none",
        ),
        (["--strategy", "cad", "--do-sample", "--num-beams", "2"], "strategy cad does not support beam_sample search"),
    ],
)
def test_command_line_mistakes_name_the_flag(flags, message):
    with pytest.raises(ConfigError, match=message):
        decoding_from_args(parse_generate(*flags))
    strategy, options = decoding_from_args(parse_generate("--strategy", "plain", "--do-sample", "--num-beams", "2"))
    assert strategy == Plain() and options.search == "beam_sample"


def test_labels_and_specs_round_trip():
    for strategy in (Plain(), PMI(0.25, 0.6), CAD(1.0), AdaCAD()):
        assert strategy_from_dict(strategy.spec()) == strategy
    assert [s.label for s in (Plain(), PMI(0.25, 0.6), CAD(1.0), AdaCAD())] == [
        "plain",
        "pmi_a0.25_p0.6",
        "cad_a1",
        "adacad",
    ]
    assert Cell(CAD(1.0), "beam").label == "cad_a1_beam" and Cell(PMI()).label == "pmi_a0.25_p0.6"
    with pytest.raises(
        ConfigError, match=r"pmi: unknown key 'alph' \(did you mean 'alpha'\?\); the accepted keys are alpha, top_p$"
    ):
        strategy_from_dict({"name": "pmi", "alph": 0.5})
    with pytest.raises(ConfigError, match="unknown strategy 'beam'; choose one of plain, pmi, cad, adacad"):
        strategy_from_dict({"name": "beam"})


# ---- SmolLM2's architecture, tokenizer and chat template: the identity on Q² WoW rows ----------------------------
@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_llama_cad_alpha_1_equals_pmi_decode_alpha_half_on_q2_wow(tiny_llama, data_dir, search):
    from faithkit.data import Columns, read_rows

    model, tokenizer = tiny_llama
    rows = list(read_rows(data_dir / "q2_wow" / "dodeca_consistent.csv", Columns(required=("document",))))[:6]
    grid = generate_grid(
        model,
        tokenizer,
        [r.document for r in rows],
        [r.history for r in rows],
        [(CAD(1.0), search), (PMI(0.5, 1.0), search), (Plain(), search)],
        template=CHAT_TEMPLATE,
        num_beams=4,
        max_new_tokens=20,
    )
    assert grid[0] == grid[1] != grid[2]  # and they are not plain decoding


def test_the_grid_plan_runs_each_decode_once_and_drops_sampling_options_without_a_sampling_cell(tiny_gpt2):
    from faithkit.decoding import plan_grid

    cells = [Cell(Plain()), Cell(PMI(0.0, 1.0)), Cell(PMI(0.5, 0.9)), Cell(Plain(), "beam")]
    plan = plan_grid(tiny_gpt2, cells, GenerationOptions(num_beams=3, temperature=0.7))
    assert list(plan.runs) == [
        ("plain", "greedy"),
        ("pmi", (("alpha", 0.5), ("top_p", 0.9)), "greedy"),
        ("plain", "beam"),
    ]
    assert plan.runs[("plain", "beam")].kwargs == {"num_beams": 3, "num_return_sequences": 1, "do_sample": False}
    assert plan.views == 2 and not plan.sampled
    with pytest.raises(ConfigError, match="beam search needs --num-beams of at least 2, got 1"):
        plan_grid(tiny_gpt2, cells, GenerationOptions())


def test_iter_grid_takes_its_generation_options_as_options_not_keywords(tiny_gpt2, gpt2_tokenizer):
    from faithkit.decoding import iter_grid

    with pytest.raises(
        ValueError, match=r"iter_grid takes num_beams in its options: pass options=GenerationOptions\(num_beams=…\)"
    ):
        next(iter_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, [Cell(Plain())], num_beams=2))


def test_iter_grid_shares_a_joint_decodes_seconds_among_its_cells_by_rows(tiny_gpt2, gpt2_tokenizer, monkeypatch):
    """Greedy plain and PMI-DECODE cells decode in one generate call: its time goes to each cell by its rows (PMI's
    two views: twice plain's), not all to the first cell yielded; a cell that decodes as another costs nothing."""
    from types import SimpleNamespace

    from faithkit.decoding import iter_grid

    clock = iter(range(0, 10_000, 3))  # every reading of the clock 3 s later: the joint call takes 3 s
    generating = importlib.import_module("faithkit.decoding.grid")
    monkeypatch.setattr(generating, "time", SimpleNamespace(monotonic=lambda: next(clock)))
    cells = [Cell(Plain()), Cell(PMI(0.5, 0.6)), Cell(PMI(0.0, 0.6)), Cell(CAD(1.0))]
    options = GenerationOptions(max_new_tokens=3, batch_size=len(DOCUMENTS))
    seconds: dict[int, float] = {}
    shown = {}
    for index, _, _ in iter_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, cells, options, seconds=seconds):
        shown[index] = seconds[index]
    assert shown == {0: pytest.approx(3 / 5), 1: pytest.approx(6 / 5), 2: 0.0, 3: pytest.approx(6 / 5)}
