"""PMI-DECODE: batched two-view decoding must equal a slow reference that recomputes both views from scratch."""

import importlib
import math

import pytest
import torch
from transformers import LogitsProcessor, TopPLogitsWarper

from faithkit.decoding import (
    CAD,
    PMI,
    Cell,
    GenerationOptions,
    Plain,
    PMIDecode,
    build_inputs,
    decode_responses,
    generate,
    generate_grid,
    prompt_cache,
    row_seed,
)
from faithkit.decoding.two_view.cad import AdaptiveContextAwareDecode, ContextAwareDecode
from faithkit.errors import ConfigError, PrecisionError
from faithkit.prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE

DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and was finished in 1889.",
    "Gardening is considered by many people to be a relaxing activity.",
    "Jazz originated in New Orleans in the late 19th century.",
]
HISTORIES = [
    ["How tall is the Eiffel Tower?"],
    ["I just started gardening.", "Nice! Do you like it?", "Yes, a lot."],
    [],
]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """These models are too small to gain from intra-op threads, and on a shared CPU the threads' spin-waits
    cost several times the work (a 2-thread PMIDecode step measured 15x slower than 1 thread under load)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(params=["gpt2", "bart"])
def tiny(request, tiny_gpt2, gpt2_tokenizer):
    if request.param == "gpt2":
        return tiny_gpt2, gpt2_tokenizer
    return request.getfixturevalue("tiny_bart"), request.getfixturevalue("bart_tokenizer")


# ---- the slow reference: every step recomputes both views with one full, unpadded, uncached pass ----
def view_ids(model, tokenizer, template, document, history):
    if model.config.is_encoder_decoder:
        return list(tokenizer(template.context_text(document, history))["input_ids"])
    return template.context(tokenizer, document, history).ids


@torch.no_grad()
def next_logprobs(model, prompt, generated):
    if model.config.is_encoder_decoder:
        decoder = [model.generation_config.decoder_start_token_id] + generated
        logits = model(
            input_ids=torch.tensor([prompt]),
            decoder_input_ids=torch.tensor([decoder]),
            use_cache=False,
            logits_to_keep=1,
        ).logits
    else:
        logits = model(input_ids=torch.tensor([prompt + generated]), use_cache=False, logits_to_keep=1).logits
    return torch.log_softmax(logits[0, -1].float(), dim=-1)


def reference_scores(lp_c, lp_h, alpha, top_p):
    in_set = torch.isfinite(TopPLogitsWarper(top_p)(None, lp_c[None]))[0]
    return torch.where(in_set, alpha * (lp_c - lp_h) + (1 - alpha) * lp_c, -math.inf)


def reference_greedy(model, tokenizer, template, alpha, top_p, steps, documents=DOCUMENTS, histories=HISTORIES):
    eos = model.generation_config.eos_token_id
    results = []
    for document, history in zip(documents, histories):
        conditioned = view_ids(model, tokenizer, template, document, history)
        history_only = view_ids(model, tokenizer, template, None, history)
        generated = []
        for _ in range(steps):
            scores = reference_scores(
                next_logprobs(model, conditioned, generated),
                next_logprobs(model, history_only, generated),
                alpha,
                top_p,
            )
            generated.append(int(scores.argmax()))
            if generated[-1] == eos:
                break
        results.append(generated)
    return results


class SlowReference(LogitsProcessor):
    """Replaces a plain (B-row) generate's scores by PMI-DECODE scores recomputed from scratch per row."""

    def __init__(self, model, tokenizer, template, alpha, top_p, num_beams, prompt_width, documents, histories):
        self.model, self.alpha, self.top_p, self.num_beams, self.width = model, alpha, top_p, num_beams, prompt_width
        self.views = [
            (view_ids(model, tokenizer, template, d, h), view_ids(model, tokenizer, template, None, h))
            for d, h in zip(documents, histories)
        ]
        self.seen = {}  # beams often share a sequence (all of them at the first step): compute it once

    def __call__(self, input_ids, scores):
        out = torch.empty_like(scores)
        for row in range(input_ids.shape[0]):
            context = row // self.num_beams
            generated = input_ids[row, self.width :].tolist()
            key = (context, tuple(generated))
            if key not in self.seen:
                conditioned, history_only = self.views[context]
                self.seen[key] = reference_scores(
                    next_logprobs(self.model, conditioned, generated),
                    next_logprobs(self.model, history_only, generated),
                    self.alpha,
                    self.top_p,
                )
            out[row] = self.seen[key]
        return out


def generated_tokens(model, outputs, inputs, rows):
    start = 1 if model.config.is_encoder_decoder else inputs["input_ids"].shape[1]
    return outputs[:rows, start:]


def until_eos(tokens, eos):
    tokens = list(tokens)
    return tokens[: tokens.index(eos) + 1] if eos in tokens else tokens


def conditioned_half(inputs):
    half = inputs["input_ids"].shape[0] // 2
    return {key: value[:half] for key, value in inputs.items()}


# ---- exactness -----------------------------------------------------------------------------
@pytest.mark.parametrize("alpha,top_p", [(0.25, 0.6), (1.0, 0.9)])
def test_greedy_matches_slow_reference(tiny, alpha, top_p):
    model, tokenizer = tiny
    inputs = build_inputs(model, tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    outputs = model.generate(
        **inputs, max_new_tokens=6, logits_processor=[PMIDecode(alpha, top_p)], pad_token_id=tokenizer.pad_token_id
    )
    expected = reference_greedy(model, tokenizer, DEFAULT_TEMPLATE, alpha, top_p, steps=6)
    got = generated_tokens(model, outputs, inputs, len(DOCUMENTS))
    eos = model.generation_config.eos_token_id
    assert [until_eos(row.tolist(), eos) for row in got] == expected
    # the history-only half followed the same tokens
    assert torch.equal(got, generated_tokens(model, outputs[len(DOCUMENTS) :], inputs, len(DOCUMENTS)))


def test_beam_search_matches_slow_reference(tiny):
    model, tokenizer = tiny
    beams = {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 5, "pad_token_id": tokenizer.pad_token_id}
    inputs = build_inputs(model, tokenizer, DOCUMENTS[:2], HISTORIES[:2], DEFAULT_TEMPLATE)
    outputs = model.generate(**inputs, logits_processor=[PMIDecode(0.25, 0.6)], **beams)
    plain = conditioned_half(inputs)
    width = 1 if model.config.is_encoder_decoder else plain["input_ids"].shape[1]
    reference = SlowReference(model, tokenizer, DEFAULT_TEMPLATE, 0.25, 0.6, 3, width, DOCUMENTS[:2], HISTORIES[:2])
    expected = model.generate(**plain, logits_processor=[reference], **beams)
    got = generated_tokens(model, outputs, inputs, 4)
    assert torch.equal(got, generated_tokens(model, expected, plain, 4))
    assert torch.equal(got, generated_tokens(model, outputs[4:], inputs, 4))  # halves in step


@pytest.mark.parametrize("beams", [1, 3])
def test_alpha_zero_top_p_one_is_plain_decoding(tiny, beams):
    model, tokenizer = tiny
    kwargs = {"num_beams": beams, "max_new_tokens": 6, "pad_token_id": tokenizer.pad_token_id}
    inputs = build_inputs(model, tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    outputs = model.generate(**inputs, logits_processor=[PMIDecode(alpha=0.0, top_p=1.0)], **kwargs)
    plain = conditioned_half(inputs)
    expected = model.generate(**plain, **kwargs)
    assert torch.equal(generated_tokens(model, outputs, inputs, 3), generated_tokens(model, expected, plain, 3))


def test_generate_returns_responses_in_order(tiny):
    model, tokenizer = tiny
    one_batch = generate(model, tokenizer, DOCUMENTS, HISTORIES, template=DEFAULT_TEMPLATE, max_new_tokens=5)
    expected = reference_greedy(model, tokenizer, DEFAULT_TEMPLATE, 0.25, 0.6, steps=5)
    assert one_batch == [tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in expected]
    assert (
        generate(model, tokenizer, DOCUMENTS, HISTORIES, template=DEFAULT_TEMPLATE, batch_size=2, max_new_tokens=5)
        == one_batch
    )


def test_prompt_cache_changes_nothing_but_speed(tiny_gpt2, gpt2_tokenizer):
    """generate() prefills prompts once per context without padding; tokens must not change (beams included)."""
    beams = {
        "num_beams": 3,
        "num_return_sequences": 2,
        "max_new_tokens": 4,
        "pad_token_id": gpt2_tokenizer.pad_token_id,
    }
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    direct = tiny_gpt2.generate(**inputs, logits_processor=[PMIDecode(0.25, 0.6)], **beams)
    cached = tiny_gpt2.generate(
        **inputs, cache=prompt_cache(tiny_gpt2, inputs, copies=3), logits_processor=[PMIDecode(0.25, 0.6)], **beams
    )
    assert torch.equal(direct, cached)
    texts = generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, template=DEFAULT_TEMPLATE, **beams)
    assert texts == decode_responses(tiny_gpt2, gpt2_tokenizer, direct, inputs, num_return_sequences=2)
    assert len(texts) == 3 and all(len(r) == 2 for r in texts)


# ---- grids: one prefill (or encoder pass) per batch for every cell ---------------------------
GRID = [(0.0, 1.0), (0.25, 0.6), (1.0, 0.9), (0.5, 1.0)]
CELLS = [PMI(alpha, top_p) for alpha, top_p in GRID]


@pytest.mark.parametrize("search,beams", [("greedy", {}), ("beam", {"num_beams": 3, "num_return_sequences": 2})])
def test_grid_equals_generate_per_cell(tiny, search, beams):
    model, tokenizer = tiny
    options = {"template": DEFAULT_TEMPLATE, "batch_size": 2, "max_new_tokens": 5, **beams}
    grid = generate_grid(model, tokenizer, DOCUMENTS, HISTORIES, [(cell, search) for cell in CELLS], **options)
    assert grid == [generate(model, tokenizer, DOCUMENTS, HISTORIES, cell, **options) for cell in CELLS]
    assert grid[0] != grid[2]  # the cells did differ


def test_grid_prefills_each_batch_once(tiny_gpt2, gpt2_tokenizer, monkeypatch):
    module = importlib.import_module("faithkit.decoding.prefill")
    calls = []
    real = module.prefill_blocks
    monkeypatch.setattr(module, "prefill_blocks", lambda *a, **k: calls.append(1) or real(*a, **k))
    generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, CELLS, batch_size=2, max_new_tokens=3)
    assert len(calls) == 2  # two batches, four cells


def test_grid_decodes_its_greedy_cells_in_one_generate_call_per_batch(tiny_gpt2, gpt2_tokenizer, monkeypatch):
    calls = []
    real = tiny_gpt2.generate
    monkeypatch.setattr(
        tiny_gpt2, "generate", lambda **kwargs: calls.append(kwargs["input_ids"].shape[0]) or real(**kwargs)
    )
    cells = [Plain(), *CELLS, CAD(1.0), Cell(Plain(), "beam")]
    options = {"template": DEFAULT_TEMPLATE, "batch_size": 2, "max_new_tokens": 4, "num_beams": 2}
    grid = generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, cells, **options)
    # per batch of 2 contexts: plain (2 rows), PMI at alpha 0 decodes as plain, three PMI cells and CAD (4 rows
    # each) in one call; the beam cell in its own
    assert calls == [18, 2, 9, 1]
    monkeypatch.setattr(tiny_gpt2, "generate", real)
    greedy = {key: value for key, value in options.items() if key != "num_beams"}
    alone = [generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, cell, **greedy) for cell in cells[:-1]]
    assert grid[:-1] == alone
    assert len(set(map(tuple, grid[:-1]))) > 2  # the cells did differ


def test_grid_sampling_equals_generate_per_cell(tiny_gpt2, gpt2_tokenizer):
    options = {"temperature": 0.9, "max_new_tokens": 6, "seeds": [11, 12, 13]}
    grid = generate_grid(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, [(c, "sample") for c in CELLS], **options)
    assert grid == [
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, c, do_sample=True, **options) for c in CELLS
    ]


# ---- sampling -----------------------------------------------------------------------------
def sample(model, tokenizer, inputs, seed, **processor_kwargs):
    torch.manual_seed(seed)
    processor = PMIDecode(0.25, 0.6, do_sample=True, **processor_kwargs)
    return model.generate(
        **inputs, do_sample=True, max_new_tokens=5, logits_processor=[processor], pad_token_id=tokenizer.pad_token_id
    )


def test_sampling_is_reproducible_and_halves_stay_in_step(tiny):
    model, tokenizer = tiny
    inputs = build_inputs(model, tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    first = sample(model, tokenizer, inputs, seed=1, temperature=0.7, top_k=20)
    assert torch.equal(first, sample(model, tokenizer, inputs, seed=1, temperature=0.7, top_k=20))
    got = generated_tokens(model, first, inputs, 3)
    assert torch.equal(got, generated_tokens(model, first[3:], inputs, 3))
    # top_k=1 leaves one token to draw: the greedy PMI-DECODE choice
    greedy = model.generate(
        **inputs, max_new_tokens=5, logits_processor=[PMIDecode(0.25, 0.6)], pad_token_id=tokenizer.pad_token_id
    )
    assert torch.equal(sample(model, tokenizer, inputs, seed=3, top_k=1), greedy)
    assert not torch.equal(got, generated_tokens(model, greedy, inputs, 3))  # it did sample


def test_sampling_through_generate_helper(tiny_gpt2, gpt2_tokenizer):
    def run():
        torch.manual_seed(0)
        return generate(
            tiny_gpt2,
            gpt2_tokenizer,
            DOCUMENTS,
            HISTORIES,
            do_sample=True,
            temperature=0.8,
            top_k=30,
            num_return_sequences=2,
            max_new_tokens=5,
        )

    first = run()
    assert first == run() and len(first) == 3 and len(first[0]) == 2


@pytest.mark.parametrize("returns", [1, 2])
def test_seeded_sampling_does_not_depend_on_the_batch(tiny, returns):
    """Each row draws from its own generator: any batch composition or order gives each row the same text."""
    model, tokenizer = tiny
    ids = ["a", "b", "c"]
    options = {"do_sample": True, "temperature": 1.5, "max_new_tokens": 6, "num_return_sequences": returns}

    def run(order, batch_size):
        torch.manual_seed(len(order) + batch_size)  # the global RNG must not matter
        texts = generate(
            model,
            tokenizer,
            [DOCUMENTS[i] for i in order],
            [HISTORIES[i] for i in order],
            seeds=[row_seed(7, ids[i]) for i in order],
            batch_size=batch_size,
            **options,
        )
        return {ids[i]: text for i, text in zip(order, texts)}

    together = run([0, 1, 2], 3)
    assert run([2, 1, 0], 1) == together
    assert run([1, 2, 0], 2) == together
    assert {ids[2]: together[ids[2]]} == run([2], 1)
    other_seed = generate(model, tokenizer, DOCUMENTS, HISTORIES, seeds=[row_seed(8, i) for i in ids], **options)
    assert other_seed != [together[i] for i in ids]


def test_generate_takes_the_options_whole_as_their_keywords_spell_them(tiny_gpt2, gpt2_tokenizer):
    options = GenerationOptions(do_sample=True, temperature=0.8, seed=3, max_new_tokens=4, batch_size=2, chat=False)
    seeds = options.row_seeds(["r0", "r1", "r2"])
    assert seeds == [row_seed(3, "r0"), row_seed(3, "r1"), row_seed(3, "r2")]
    texts = generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, PMI(0.5, 0.9), options, seeds=seeds)
    assert texts == generate(
        tiny_gpt2,
        gpt2_tokenizer,
        DOCUMENTS,
        HISTORIES,
        PMI(0.5, 0.9),
        template=DEFAULT_TEMPLATE,
        batch_size=2,
        do_sample=True,
        temperature=0.8,
        max_new_tokens=4,
        seeds=seeds,
    )
    with pytest.raises(ValueError, match=r"^seed 3 seeds each row with its id: pass seeds=options.row_seeds\(ids\)"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, PMI(0.5, 0.9), options)
    assert row_seed(3, "r0") == 2853959113720906692  # stable across processes and runs (no hash randomisation)


@pytest.mark.parametrize(
    "settings,message",
    [
        ({"num_beams": 0}, "num_beams must be at least 1, got 0"),
        ({"batch_size": 0}, "batch_size must be at least 1, got 0"),
        ({"max_new_tokens": 0}, "max_new_tokens must be at least 1, got 0"),
        ({"num_return_sequences": 2}, "--num-return-sequences 2 is more than --num-beams 1"),
        ({"seed": 1}, "--seed applies to sampling only: add --do-sample"),
        ({"temperature": 0.7, "top_k": 5}, "--temperature, --top-k apply to sampling only"),
        ({"do_sample": True, "temperature": 0.0}, "temperature must be above 0, got 0"),
    ],
)
def test_options_validate_names_the_flag(settings, message):
    with pytest.raises(ConfigError, match=message):
        GenerationOptions(**settings).validate()
    assert GenerationOptions(num_beams=4, num_return_sequences=2).validate()
    assert GenerationOptions(do_sample=True, num_return_sequences=3, seed=0).validate()
    assert GenerationOptions(do_sample=True, num_beams=2).validate().search == "beam_sample"


class CountSteps(LogitsProcessor):
    def __init__(self):
        self.steps = 0

    def __call__(self, input_ids, scores):
        self.steps += 1
        return scores


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("processor", [PMIDecode, ContextAwareDecode])
def test_generate_sampling_without_telling_the_processor_stops_where_the_halves_part(
    tiny_gpt2, gpt2_tokenizer, seed, processor
):
    """A processor knows only what it is given (no frame of generate is read): when generate samples each row itself,
    the step after the halves first draw different tokens stops, saying to pass do_sample=True to the processor."""
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    torch.manual_seed(seed)
    steps = CountSteps()
    with pytest.raises(
        RuntimeError,
        match=rf"{processor.__name__}: the history-only rows no longer end on the same token .* generate sampled each "
        rf"row independently: for sampling pass do_sample=True \(and temperature/top_k\) to the processor itself",
    ):
        tiny_gpt2.generate(
            **inputs,
            do_sample=True,
            max_new_tokens=8,
            logits_processor=[steps, processor()],
            pad_token_id=gpt2_tokenizer.pad_token_id,
        )
    assert steps.steps >= 2  # the first step's draw parts the halves; the next one sees it


def test_a_processor_told_to_sample_or_greedy_generate_passes_the_sampling_check(tiny_gpt2, gpt2_tokenizer):
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    options = {"max_new_tokens": 3, "pad_token_id": gpt2_tokenizer.pad_token_id}
    tiny_gpt2.generate(**inputs, do_sample=True, logits_processor=[PMIDecode(do_sample=True)], **options)
    tiny_gpt2.generate(**inputs, logits_processor=[PMIDecode()], **options)
    tiny_gpt2.generate(**inputs, num_beams=2, logits_processor=[PMIDecode()], **options)


# ---- -inf from earlier processors ----------------------------------------------------------
class BanTokens(LogitsProcessor):
    def __init__(self, tokens):
        self.tokens = torch.tensor(tokens)

    def __call__(self, input_ids, scores):
        return scores.index_fill(1, self.tokens, -math.inf)


@pytest.mark.parametrize("alpha,top_p", [(0.0, 1.0), (0.25, 0.6), (1.0, 1.0)])
def test_tokens_banned_in_both_halves_give_no_nan(tiny_gpt2, gpt2_tokenizer, alpha, top_p):
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    free = tiny_gpt2.generate(
        **inputs, max_new_tokens=4, logits_processor=[PMIDecode(alpha, top_p)], pad_token_id=gpt2_tokenizer.pad_token_id
    )
    banned = sorted(set(generated_tokens(tiny_gpt2, free, inputs, 3).flatten().tolist()))
    out = tiny_gpt2.generate(
        **inputs,
        max_new_tokens=4,
        logits_processor=[BanTokens(banned), PMIDecode(alpha, top_p)],
        pad_token_id=gpt2_tokenizer.pad_token_id,
        output_scores=True,
        return_dict_in_generate=True,
    )
    assert not any(torch.isnan(step).any() for step in out.scores)
    assert not set(generated_tokens(tiny_gpt2, out.sequences, inputs, 6).flatten().tolist()) & set(banned)


def test_inf_cases_in_one_step():
    ninf = -math.inf
    conditioned = torch.tensor([[2.0, 1.0, ninf, 0.5], [ninf, 3.0, 1.0, 0.0]])
    history_only = torch.tensor([[1.0, ninf, ninf, 0.5], [ninf, ninf, ninf, 0.0]])
    scores = torch.cat([conditioned, history_only])
    input_ids = torch.zeros(4, 3, dtype=torch.long)
    for alpha in (0.0, 0.5, 1.0):
        out = PMIDecode(alpha, 1.0)(input_ids, scores)
        assert not torch.isnan(out).any() and torch.equal(out[:2], out[2:])
        assert out[0, 2] == ninf and out[0, 1] == ninf  # banned in both / in the history-only half
        assert torch.isfinite(out[0, [0, 3]]).all()
    # the history-only half forbids the whole top-p set {1}: rank it by the conditioned half alone
    out = PMIDecode(0.5, 0.5)(input_ids, scores)
    assert out[1].argmax() == 1 and torch.isfinite(out[1, 1]) and (out[1, [0, 2, 3]] == ninf).all()


def test_combined_scores_follow_the_formula():
    torch.manual_seed(0)
    scores = torch.randn(4, 50)
    out = PMIDecode(0.3, 1.0)(torch.zeros(4, 2, dtype=torch.long), scores)
    lp = torch.log_softmax(scores, -1)
    assert torch.allclose(out[:2], 0.3 * (lp[:2] - lp[2:]) + 0.7 * lp[:2])
    plain = PMIDecode(0.0, 1.0)(torch.zeros(4, 2, dtype=torch.long), scores)
    assert torch.allclose(plain[:2], lp[:2])


def test_top_p_set_is_the_warpers_set():
    from faithkit.decoding.two_view.pmi_decode import top_p_set

    torch.manual_seed(0)
    for scale in (0.1, 1.0, 5.0, 20.0):  # flat rows take the warper's own path, peaked rows the top-k one
        logprobs = torch.log_softmax(torch.randn(6, 5000) * scale, dim=-1)
        logprobs[0, :100] = -math.inf
        for top_p in (0.05, 0.6, 0.95, 1.0):
            expected = torch.isfinite(TopPLogitsWarper(top_p)(None, logprobs))
            assert torch.equal(top_p_set(logprobs, top_p, max_k=256), expected)


# ---- errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"alpha": -0.1}, r"^alpha must be in \[0, 1\], got -0.1 "),
        ({"alpha": 1.5}, r"^alpha must be in \[0, 1\], got 1.5 "),
        ({"top_p": 0.0}, r"^top_p must be in \(0, 1\], got 0 "),
        ({"top_p": 1.2}, r"^top_p must be in \(0, 1\], got 1.2 "),
        ({"temperature": 0.7}, "pass do_sample=True"),
        ({"do_sample": True, "temperature": 0.0}, "temperature must be > 0"),
        ({"do_sample": True, "top_k": -1}, "top_k must be a non-negative integer"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PMIDecode(**kwargs)


def test_bad_batches():
    with pytest.raises(ValueError, match="needs 2B rows"):
        PMIDecode()(torch.zeros(3, 2, dtype=torch.long), torch.zeros(3, 10))
    with pytest.raises(ValueError, match="rows 0 and 1 are not two views of one context"):
        PMIDecode()(torch.tensor([[1, 2], [1, 3]]), torch.zeros(2, 10))
    drifting = PMIDecode()
    drifting(torch.tensor([[1, 2], [1, 2]]), torch.zeros(2, 10))  # the first step: two views
    with pytest.raises(RuntimeError, match="no longer end on the same token") as error:
        drifting(torch.tensor([[1, 2, 4], [1, 2, 5]]), torch.zeros(2, 10))
    assert "a logits processor placed after PMIDecode" in str(error.value)


EIFFEL = "Document: The Eiffel Tower is 330 metres tall.\n\nHow tall is the Eiffel Tower?\nAgent:"
PENGUIN = "Document: Penguins are flightless birds of the southern hemisphere.\n\nCan penguins fly?\nAgent:"


@pytest.mark.parametrize(
    "processor",
    [PMIDecode(0.25, 0.6), ContextAwareDecode(1.0), AdaptiveContextAwareDecode()],
    ids=["pmi", "cad", "adacad"],
)
def test_a_batch_that_is_not_two_views_is_refused(tiny_gpt2, gpt2_tokenizer, processor):
    """The usage a user tries first: two prompts from the tokenizer, an even batch, so no row count gives it away."""
    gpt2_tokenizer.padding_side = "left"
    inputs = gpt2_tokenizer([EIFFEL, PENGUIN], padding=True, return_tensors="pt")
    with pytest.raises(ValueError) as error:
        tiny_gpt2.generate(
            **inputs, max_new_tokens=3, logits_processor=[processor], pad_token_id=gpt2_tokenizer.pad_token_id
        )
    assert str(error.value).startswith(f"{processor.method}: rows 0 and 1 are not two views of one context")
    assert str(error.value).endswith("build the inputs with faithkit.decoding.build_inputs")


@pytest.mark.parametrize(
    ("template", "max_context_tokens"),
    [(DEFAULT_TEMPLATE, None), (DEFAULT_TEMPLATE, 30), (CHAT_TEMPLATE, None), (CHAT_TEMPLATE, 60)],
    ids=["plain", "plain-cut", "chat", "chat-cut"],
)
def test_build_inputs_are_two_views_also_cut_or_chat(tiny_llama, template, max_context_tokens):
    """Cut documents and chat templates (a system turn the document joins) still pass the check, beams too."""
    model, tokenizer = tiny_llama
    documents = [DOCUMENTS[0] * 4, DOCUMENTS[1], ""]
    options = GenerationOptions(max_context_tokens=max_context_tokens, max_new_tokens=2)
    inputs = build_inputs(model, tokenizer, documents, HISTORIES, template, options)
    for processor in (PMIDecode(0.25, 0.6), AdaptiveContextAwareDecode()):
        model.generate(
            **inputs, max_new_tokens=2, num_beams=2, logits_processor=[processor], pad_token_id=tokenizer.pad_token_id
        )


class FavoursEachRowsOwnToken(LogitsProcessor):
    """Changes each row's scores its own way, as a repetition penalty does (it reads each row's own prompt)."""

    def __call__(self, input_ids, scores):
        rows = torch.arange(scores.shape[0])
        return scores.index_put((rows, rows), torch.tensor(1e4))


def test_a_processor_after_pmidecode_is_named_when_the_halves_drift(tiny_gpt2, gpt2_tokenizer):
    inputs = build_inputs(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, DEFAULT_TEMPLATE)
    run = dict(max_new_tokens=3, pad_token_id=gpt2_tokenizer.pad_token_id)
    with pytest.raises(RuntimeError, match="a logits processor placed after PMIDecode changed the halves' scores"):
        tiny_gpt2.generate(**inputs, logits_processor=[PMIDecode(0.25, 1.0), FavoursEachRowsOwnToken()], **run)
    tiny_gpt2.generate(**inputs, logits_processor=[FavoursEachRowsOwnToken(), PMIDecode(0.25, 1.0)], **run)


def test_nan_scores_are_a_precision_error():
    """NaN (or +inf) from the model is an overflow, not a score; -inf is a token an earlier processor forbade."""
    input_ids = torch.ones(2, 3, dtype=torch.long)
    PMIDecode()(input_ids, torch.tensor([[0.0, -math.inf, 1.0]] * 2))
    for bad in (math.nan, math.inf):
        with pytest.raises(PrecisionError, match="the model's logits are NaN or infinite.*--dtype bfloat16"):
            PMIDecode()(input_ids, torch.tensor([[0.0, bad, 1.0]] * 2))


def test_generate_names_the_dtype_of_a_model_whose_logits_overflow(tiny_gpt2, gpt2_tokenizer):
    """Every strategy, plain too, stops instead of decoding empty responses; the message names the model's dtype."""
    import copy

    broken = copy.deepcopy(tiny_gpt2)
    with torch.no_grad():
        broken.lm_head.weight[7] = math.nan  # tied to the input embeddings: token 7's logit is NaN everywhere
    for strategy in ("plain", "pmi"):
        with pytest.raises(PrecisionError, match="the model runs in float32"):
            generate(broken, gpt2_tokenizer, DOCUMENTS[:1], HISTORIES[:1], strategy, max_new_tokens=2)


def test_generate_rejects_what_it_cannot_honour(tiny_gpt2, gpt2_tokenizer):
    with pytest.raises(ValueError, match="pmi does not support beam_sample search"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, do_sample=True, num_beams=2)
    with pytest.raises(ValueError, match="min_p would be ignored"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES, do_sample=True, min_p=0.1)
    with pytest.raises(ValueError, match="same length"):
        generate(tiny_gpt2, gpt2_tokenizer, DOCUMENTS, HISTORIES[:2])


# ---- SmolLM2's architecture, tokenizer and chat template ----------------------------------------
def test_llama_greedy_matches_slow_reference(tiny_llama):
    model, tokenizer = tiny_llama
    inputs = build_inputs(model, tokenizer, DOCUMENTS[:2], HISTORIES[:2], CHAT_TEMPLATE)
    outputs = model.generate(**inputs, max_new_tokens=6, logits_processor=[PMIDecode(0.5, 0.6)])
    expected = reference_greedy(
        model, tokenizer, CHAT_TEMPLATE, 0.5, 0.6, steps=6, documents=DOCUMENTS[:2], histories=HISTORIES[:2]
    )
    eos = model.generation_config.eos_token_id
    assert [until_eos(row.tolist(), eos) for row in generated_tokens(model, outputs, inputs, 2)] == expected
    texts = decode_responses(model, tokenizer, outputs, inputs)
    assert texts == [tokenizer.decode(ids, skip_special_tokens=True).strip() for ids in expected]

    plain = conditioned_half(inputs)
    same = model.generate(**inputs, max_new_tokens=6, logits_processor=[PMIDecode(0.0, 1.0)])
    assert torch.equal(
        generated_tokens(model, same, inputs, 2),
        generated_tokens(model, model.generate(**plain, max_new_tokens=6), plain, 2),
    )


def test_llama_grid_equals_generate_per_cell(tiny_llama):
    model, tokenizer = tiny_llama
    options = {"batch_size": 2, "max_new_tokens": 8}
    grid = generate_grid(model, tokenizer, DOCUMENTS, HISTORIES, CELLS, **options)
    assert grid == [generate(model, tokenizer, DOCUMENTS, HISTORIES, cell, **options) for cell in CELLS]


def test_llama_beam_search_matches_slow_reference(tiny_llama):
    model, tokenizer = tiny_llama
    beams = {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 4}
    inputs = build_inputs(model, tokenizer, DOCUMENTS[:2], HISTORIES[:2], CHAT_TEMPLATE)
    outputs = model.generate(**inputs, logits_processor=[PMIDecode(0.5, 0.6)], **beams)
    plain = conditioned_half(inputs)
    width = plain["input_ids"].shape[1]
    reference = SlowReference(model, tokenizer, CHAT_TEMPLATE, 0.5, 0.6, 3, width, DOCUMENTS[:2], HISTORIES[:2])
    expected = model.generate(**plain, logits_processor=[reference], **beams)
    assert torch.equal(generated_tokens(model, outputs, inputs, 4), generated_tokens(model, expected, plain, 4))


def test_contexts_longer_than_the_model_keep_their_end(tiny_gpt2, gpt2_tokenizer, caplog):
    # the tiny GPT-2 has 256 positions: 250 of them are left for a context beside 6 new tokens
    long_document = " ".join(f"fact{i}" for i in range(600))
    documents, histories = [long_document, DOCUMENTS[0]], [["Tell me more."], ["How tall is it?"]]
    with caplog.at_level("WARNING", logger="faithkit.decoding"):
        cut = generate(tiny_gpt2, gpt2_tokenizer, documents, histories, max_new_tokens=6)
    assert "1 of 2 contexts cut to the 250 tokens the model has room for" in caplog.text
    assert cut == generate(tiny_gpt2, gpt2_tokenizer, documents, histories, max_new_tokens=6, max_context_tokens=250)
    budgets = GenerationOptions(max_context_tokens=1000, max_new_tokens=6)
    rows = build_inputs(tiny_gpt2, gpt2_tokenizer, documents, histories, options=budgets)
    assert rows["input_ids"].shape[1] == 250  # a larger limit than the model's room is no way past it
    with pytest.raises(ConfigError, match="--max-new-tokens 300 leaves no room for a context in the model's 256"):
        generate(tiny_gpt2, gpt2_tokenizer, documents, histories, max_new_tokens=300)
