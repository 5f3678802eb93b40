"""The fast scorer (batching, bucketing, shared-prefix caching) equals one-pass-per-example scoring."""

import random

import pytest
import torch

from faithkit.scoring import TokenScorer, _group_by_prefix, reference_token_logprobs


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
    """Rows under one document form one group whose prefix is the document."""
    requests = _mixed_requests(tiny_gpt2.config.vocab_size)
    sequences = [list(c) + list(t) for c, t in requests]
    groups = _group_by_prefix(sequences, [len(c) for c, _ in requests], min_shared=16)
    sizes = sorted(len(g.members) for g in groups if len(g.members) > 1)
    assert sizes == [9]  # 5 histories + 4 responses share the 40-token document
    (shared,) = [g for g in groups if len(g.members) > 1]
    assert shared.prefix_length >= 40


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


@pytest.mark.slow
def test_smollm2_batched_equals_reference(smollm2):
    model, tokenizer = smollm2
    requests = _mixed_requests(len(tokenizer), seed=1)
    fast = TokenScorer(model, batch_size=4)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(model, context, target), atol=1e-4, rtol=0)


@pytest.mark.parametrize("batch_size", [2, 5])
def test_prefixes_of_different_lengths_share_one_batch(tiny_gpt2, batch_size):
    """Several documents, each under several rows: padded prefixes and mixed-owner suffix batches stay exact."""
    rng = random.Random(3)
    tokens = lambda n: [rng.randrange(100, tiny_gpt2.config.vocab_size) for _ in range(n)]  # noqa: E731
    requests = []
    for length in (20, 45, 33):
        document = tokens(length)
        requests += [(document + tokens(rng.randint(0, 6) or 1), tokens(rng.randint(1, 5))) for _ in range(7)]
    sequences = [list(c) + list(t) for c, t in requests]
    groups = _group_by_prefix(sequences, [len(c) for c, _ in requests], min_shared=16)
    assert sorted(len(g.members) for g in groups) == [7, 7, 7]
    fast = TokenScorer(tiny_gpt2, batch_size=batch_size)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)


def test_rows_with_one_short_context_share_it(tiny_gpt2):
    """A short history under many candidate responses (the history-only view of a sweep) is run once."""
    rng = random.Random(5)
    tokens = lambda n: [rng.randrange(100, tiny_gpt2.config.vocab_size) for _ in range(n)]  # noqa: E731
    history = tokens(6)  # shorter than MIN_SHARED_PREFIX
    requests = [(history, tokens(rng.randint(1, 8))) for _ in range(8)] + [(tokens(6), tokens(3))]
    sequences = [list(c) + list(t) for c, t in requests]
    groups = _group_by_prefix(sequences, [len(c) for c, _ in requests], min_shared=16)
    assert sorted(len(g.members) for g in groups) == [1, 8]
    assert next(g for g in groups if len(g.members) == 8).prefix_length == 6
    fast = TokenScorer(tiny_gpt2, batch_size=3)(requests)
    for (context, target), values in zip(requests, fast):
        torch.testing.assert_close(values, reference_token_logprobs(tiny_gpt2, context, target), atol=1e-4, rtol=0)
