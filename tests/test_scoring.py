"""The fast scorer (batching, bucketing, shared-prefix caching) equals one-pass-per-example scoring."""

import random

import pytest
import torch

from faithkit.serving import scoring
from faithkit.serving.scoring import TokenScorer, _prefix_tree, reference_token_logprobs


def _mixed_requests(vocab_size: int, seed: int = 0):
    """Contexts of mixed lengths: some share long prefixes (one document, many rows), some share nothing."""
    rng = random.Random(seed)
    tokens = lambda n: [rng.randrange(100, vocab_size) for _ in range(n)]  # noqa: E731
    document = tokens(40)
    context = document + tokens(7)
    requests = []
    for _ in range(5):  # one document under several histories
        requests.append((document + tokens(rng.randint(1, 12)), tokens(rng.randint(1, 9))))
    for _ in range(4):  # one context under several candidate responses
        requests.append((context, tokens(rng.randint(1, 9))))
    for _ in range(6):  # unrelated rows of mixed lengths
        requests.append((tokens(rng.randint(1, 30)), tokens(rng.randint(1, 9))))
    return requests


def _several_documents(vocab_size: int):
    """Three documents of different lengths, each under seven rows: shared runs of different lengths."""
    rng = random.Random(3)
    tokens = lambda n: [rng.randrange(100, vocab_size) for _ in range(n)]  # noqa: E731
    requests = []
    for length in (20, 45, 33):
        document = tokens(length)
        requests += [(document + tokens(rng.randint(0, 6) or 1), tokens(rng.randint(1, 5))) for _ in range(7)]
    return requests


@pytest.mark.parametrize("share_prefixes", [True, False])
@pytest.mark.parametrize("batch_size", [1, 3, 16])
def test_batched_equals_reference(tiny_gpt2, share_prefixes, batch_size):
    requests = _mixed_requests(tiny_gpt2.config.vocab_size)
    fast = TokenScorer(tiny_gpt2, batch_size=batch_size, share_prefixes=share_prefixes)(requests)
    for (context, target), values in zip(requests, fast):
        expected = reference_token_logprobs(tiny_gpt2, context, target)
        assert values.shape == (len(target),)
        torch.testing.assert_close(values, expected, atol=1e-4, rtol=0)


def test_shared_prefix_is_cached_once(tiny_gpt2):
    """Rows under one document hang from one node: the document; unrelated rows stand alone."""
    requests = _mixed_requests(tiny_gpt2.config.vocab_size)
    tree = _prefix_tree([list(c) + list(t) for c, t in requests])
    [shared] = [node for node in tree if node.children]
    assert len(shared.runnable) == 40 and len(shared.children) == 9  # 5 histories + 4 responses
    assert len(tree) == 1 + 6  # and the 6 unrelated rows
    # the 7 context tokens after the document are shared by only 4 rows: too little to pay for a pass
    assert all(node.start == 40 and not node.children for node in shared.children)


def test_prefix_never_covers_a_target_token(tiny_gpt2):
    """A context that is a prefix of another row's context still gets its first target scored."""
    short = list(range(200, 230))
    requests = [(short, [5, 6]), (short + [7, 8, 9], [10])]
    fast = TokenScorer(tiny_gpt2, batch_size=2)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_empty_context_or_target_is_refused(tiny_gpt2):
    with pytest.raises(ValueError, match="request 1: context and target must both be non-empty"):
        TokenScorer(tiny_gpt2)([([1, 2], [3]), ([], [3])])
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        TokenScorer(tiny_gpt2, batch_size=0)
    with pytest.raises(ValueError, match="max_tokens_per_call must be at least 1"):
        TokenScorer(tiny_gpt2, max_tokens_per_call=0)


def test_llama_batched_equals_reference(tiny_llama):
    model, tokenizer = tiny_llama
    requests = _mixed_requests(len(tokenizer), seed=1)
    fast = TokenScorer(model, batch_size=4)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(model, context, target), atol=1e-4, rtol=0)


@pytest.mark.parametrize("batch_size", [2, 5])
def test_prefixes_of_different_lengths_share_one_batch(tiny_gpt2, batch_size):
    """Several documents, each under several rows: padded prefixes and mixed-owner suffix batches stay exact."""
    requests = _several_documents(tiny_gpt2.config.vocab_size)
    tree = _prefix_tree([list(c) + list(t) for c, t in requests])
    assert sorted(len(node.children) for node in tree) == [7, 7, 7]
    fast = TokenScorer(tiny_gpt2, batch_size=batch_size)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_rows_with_one_short_context_share_it(tiny_gpt2):
    """A short history under many candidate responses (the history-only view of a sweep) is run once."""
    rng = random.Random(5)
    tokens = lambda n: [rng.randrange(100, tiny_gpt2.config.vocab_size) for _ in range(n)]  # noqa: E731
    history = tokens(6)
    requests = [(history, tokens(rng.randint(1, 8))) for _ in range(8)] + [(tokens(6), tokens(3))]
    tree = _prefix_tree([list(c) + list(t) for c, t in requests])
    assert sorted(len(node.children) for node in tree) == [0, 8]
    assert len(next(node for node in tree if node.children).runnable) == 6
    fast = TokenScorer(tiny_gpt2, batch_size=3)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_sweep_candidates_share_their_common_start_and_duplicates_run_once(tiny_gpt2):
    """An α/p sweep's candidates often start alike or coincide: shared starts run once, duplicates once."""
    rng = random.Random(7)
    tokens = lambda n: [rng.randrange(100, tiny_gpt2.config.vocab_size) for _ in range(n)]  # noqa: E731
    context, opening = tokens(30), tokens(12)
    responses = [opening + tokens(rng.randint(1, 6)) for _ in range(4)] + [tokens(5), tokens(9)]
    responses += [responses[0], responses[4]]  # two settings gave the same response as others
    requests = [(context, response) for response in responses]
    requests.append((context + responses[1][:3], responses[1][3:]))  # same tokens, context cut elsewhere

    run = []  # real (unpadded) tokens of each forward pass

    def count_tokens(module, args, kwargs):
        run.append(int(kwargs["attention_mask"][:, -kwargs["input_ids"].shape[1] :].sum()))

    hook = tiny_gpt2.register_forward_pre_hook(count_tokens, with_kwargs=True)
    finished = []
    try:
        fast = TokenScorer(tiny_gpt2, batch_size=3)(requests, progress=finished.append)
    finally:
        hook.remove()
    for (context_ids, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context_ids, target), atol=1e-4, rtol=0)
    assert sum(finished) == len(requests)
    distinct = responses[:6]
    tails = sum(len(r) - 12 for r in distinct[:4]) + len(distinct[4]) + len(distinct[5])
    assert sum(run) == 30 + 12 + tails  # every distinct token once

    [root] = _prefix_tree([list(c) + list(t) for c, t in requests])
    assert len(root.runnable) == 30 and len(root.children) == 3  # the shared opening, and two other responses


class CallSizes:
    """Records the input shape, the token positions (rows × columns) and the logits positions of each forward call."""

    def __init__(self, model):
        self.shapes, self.tokens, self.logits = [], [], []
        self._hook = model.register_forward_hook(self._record, with_kwargs=True)

    def _record(self, module, args, kwargs, output):
        self.shapes.append(tuple(kwargs["input_ids"].shape))
        self.tokens.append(kwargs["input_ids"].numel())
        self.logits.append(output.logits.shape[0] * output.logits.shape[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._hook.remove()


def _long_target_requests(vocab_size: int):
    """One long response under four contexts (the four PMI-FAITH views), two of them sharing a document."""
    rng = random.Random(11)
    tokens = lambda n: [rng.randrange(100, vocab_size) for _ in range(n)]  # noqa: E731
    document, history, prompt, response = tokens(40), tokens(6), tokens(2), tokens(150)
    contexts = [document + history + prompt, history + prompt, document + prompt, prompt]
    return [(context, response) for context in contexts]


def _assert_windowed_is_exact(model, requests, batch_size: int, max_tokens_per_call: int) -> None:
    """Windowed runs stay within the budget, take more calls, and give the unwindowed run's and the reference's values."""
    whole = TokenScorer(model, batch_size=batch_size, max_tokens_per_call=10**9)
    with CallSizes(model) as unwindowed:
        expected = whole(requests)
    with CallSizes(model) as windowed:
        values = TokenScorer(model, batch_size=batch_size, max_tokens_per_call=max_tokens_per_call)(requests)
    assert len(windowed.tokens) > len(unwindowed.tokens)
    cap = max(max_tokens_per_call, batch_size)  # a window is at least one column of every row
    assert max(windowed.tokens) <= cap and max(windowed.logits) <= cap
    for (context, target), got, unsliced in zip(requests, values, expected):
        torch.testing.assert_close(got, unsliced, atol=1e-5, rtol=0)
        torch.testing.assert_close(got, reference_token_logprobs(model, context, target), atol=1e-4, rtol=0)


@pytest.mark.parametrize("batch_size, max_tokens_per_call", [(1, 2), (3, 7), (3, 64), (16, 40)])
def test_windowed_runs_equal_whole_runs(tiny_gpt2, batch_size, max_tokens_per_call):
    """Long batches go through the model in windows that continue the cache: same values, bounded calls."""
    requests = _mixed_requests(tiny_gpt2.config.vocab_size) + _long_target_requests(tiny_gpt2.config.vocab_size)
    _assert_windowed_is_exact(tiny_gpt2, requests, batch_size, max_tokens_per_call)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_windows_end_where_they_would_keep_more_than_max_logits(tiny_gpt2, monkeypatch, batch_size):
    """With Gemma 3's vocabulary the logits, not the tokens, are a call's big tensor: 6 kept columns per call here."""
    monkeypatch.setattr(scoring, "MAX_LOGITS", 6 * batch_size * tiny_gpt2.config.vocab_size)
    requests = _long_target_requests(tiny_gpt2.config.vocab_size)
    with CallSizes(tiny_gpt2) as calls:
        values = TokenScorer(tiny_gpt2, batch_size=batch_size, max_tokens_per_call=10**9)(requests)
    assert max(calls.logits) <= 6 * batch_size and len(calls.logits) >= 150 // 6  # the 150-token response
    for (context, target), got in zip(requests, values):
        torch.testing.assert_close(got, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_shared_runs_do_not_inherit_padding_from_leaves(tiny_gpt2):
    """A short shared document batched with long leaves would hand its children their length of padding."""
    requests = _long_target_requests(tiny_gpt2.config.vocab_size)
    cached = []  # cache slots before each call that continues a cache

    def record(module, args, kwargs):
        if kwargs.get("cache") is not None:
            cached.append(kwargs["attention_mask"].shape[1] - kwargs["input_ids"].shape[1])

    hook = tiny_gpt2.register_forward_pre_hook(record, with_kwargs=True)
    try:
        values = TokenScorer(tiny_gpt2, max_tokens_per_call=10**9)(requests)
    finally:
        hook.remove()
    assert cached == [40]  # the children continue the 40 document tokens, not the 158-token leaves' width
    for (context, target), got in zip(requests, values):
        torch.testing.assert_close(got, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_rows_of_very_different_lengths_run_apart(tiny_gpt2):
    """The views of one long document (two contexts of a few tokens, two of many) are two batches, not one padded one."""
    rng = random.Random(13)
    requests = [
        ([rng.randrange(100, 5000) for _ in range(n)], [rng.randrange(100, 5000) for _ in range(5)])
        for n in (3, 15, 120, 125)
    ]
    with CallSizes(tiny_gpt2) as calls:
        values = TokenScorer(tiny_gpt2, batch_size=8)(requests)
    assert calls.shapes == [(2, 20), (2, 130)]
    for (context, target), got in zip(requests, values):
        torch.testing.assert_close(got, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_alibi_model_without_position_ids_is_exact():
    """BLOOM (the paper's model family) takes positions from the attention mask (ALiBi), not position ids."""
    from transformers import BloomConfig, BloomForCausalLM

    torch.manual_seed(0)
    bloom = BloomForCausalLM(
        BloomConfig(vocab_size=500, hidden_size=32, n_layer=2, n_head=4, initializer_range=0.3)
    ).eval()
    requests = _mixed_requests(500)
    shifted = reference_token_logprobs(bloom, [7] + list(requests[0][0]), requests[0][1])
    assert (shifted - reference_token_logprobs(bloom, *requests[0])).abs().max() > 1e-2  # positions matter
    for batch_size in (3, 16):
        fast = TokenScorer(bloom, batch_size=batch_size)(requests)
        for (context, target), values in zip(requests, fast):
            torch.testing.assert_close(values, reference_token_logprobs(bloom, context, target), atol=1e-4, rtol=0)
    _assert_windowed_is_exact(bloom, requests + _long_target_requests(500), batch_size=3, max_tokens_per_call=20)


def test_sliding_window_model_is_exact():
    """Gemma 3 mixes sliding-window layers, which count cache slots: shared runs there go one per batch."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=500,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=8,
        layer_types=["sliding_attention", "full_attention"],
        initializer_range=0.3,
    )
    gemma = Gemma3ForCausalLM(config).eval()
    requests = _several_documents(500)
    scorer = TokenScorer(gemma, batch_size=4)
    assert not scorer._pads_caches  # padded shared runs of different lengths would be off by more than 1 here
    for (context, target), values in zip(requests, scorer(requests)):
        torch.testing.assert_close(values, reference_token_logprobs(gemma, context, target), atol=1e-4, rtol=0)
    # windows shorter and longer than the sliding window, on shared runs and on a long response
    for max_tokens_per_call in (5, 40):
        _assert_windowed_is_exact(gemma, requests + _long_target_requests(500), 4, max_tokens_per_call)


def _window_rows(vocab_size: int):
    """Rows of 40-80 tokens, several under each of three shared documents: longer than a 16-token window."""
    rng = random.Random(5)
    tokens = lambda n: [rng.randrange(10, vocab_size) for _ in range(n)]  # noqa: E731
    requests = []
    for length in (30, 38, 45):
        document = tokens(length)
        requests += [(document + tokens(rng.randint(6, 20)), tokens(rng.randint(4, 15))) for _ in range(4)]
    return requests


def _tiny_window_model(family: str):
    """A tiny random model of ``family`` whose attention is a 16-token sliding window (on every or some layers)."""
    from transformers import (
        MistralConfig,
        MistralForCausalLM,
        Phi3Config,
        Phi3ForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    shape = dict(
        vocab_size=500,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        sliding_window=16,
        initializer_range=0.3,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(0)
    if family == "mistral":  # sliding_window alone, without layer_types, as Mistral checkpoints give it
        return MistralForCausalLM(MistralConfig(**shape)).eval()
    if family == "phi3":
        return Phi3ForCausalLM(Phi3Config(**shape)).eval()
    # Qwen2: a window on the layers from max_window_layers on, full attention below
    return Qwen2ForCausalLM(Qwen2Config(**shape, use_sliding_window=True, max_window_layers=1)).eval()


@pytest.mark.parametrize("family", ["mistral", "phi3", "qwen2"])
def test_sliding_window_without_layer_types_is_exact(family):
    """A window declared by ``sliding_window`` alone (Mistral, Phi-3) or per layer (Qwen2) counts cache slots just
    as Gemma's does: at the default batch size and prefix sharing, rows longer than the window are exact."""
    model = _tiny_window_model(family)
    requests = _window_rows(500)
    scorer = TokenScorer(model)
    assert not scorer._pads_caches
    for (context, target), values in zip(requests, scorer(requests)):
        torch.testing.assert_close(values, reference_token_logprobs(model, context, target), atol=1e-5, rtol=0)


def test_padded_caches_would_be_wrong_under_a_sliding_window(monkeypatch):
    """What the test above guards against: padding inside the caches of a windowed model moves its window."""
    model = _tiny_window_model("mistral")
    requests = _window_rows(500)
    scorer = TokenScorer(model)
    monkeypatch.setattr(scorer, "_pads_caches", True)
    worst = max(
        (values - reference_token_logprobs(model, *request)).abs().max().item()
        for request, values in zip(requests, scorer(requests))
    )
    assert worst > 1e-2


def test_nan_logits_are_an_error_naming_the_dtype(tiny_gpt2):
    """An overflowing precision gives NaN logits; they are one error, not NaN scores."""
    import copy

    from faithkit.errors import PrecisionError

    broken = copy.deepcopy(tiny_gpt2)
    with torch.no_grad():
        broken.lm_head.weight[7] = float("nan")  # tied to the input embeddings: token 7's logit is NaN everywhere
    with pytest.raises(PrecisionError, match=r"NaN or infinite: the model runs in float32.*--dtype bfloat16"):
        TokenScorer(broken)(_mixed_requests(500))
