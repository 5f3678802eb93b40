"""SpanConstrainedLogitsProcessor: only passage substrings or the no-answer, exactly as a brute-force reference allows."""

import random

import pytest
import torch

from faithkit.decoding import SpanConstrainedLogitsProcessor

END, NO_ANSWER = 99, [50, 51]


def reference_allowed(passage, emitted):
    """Slow definition: enumerate every complete answer (substring or no-answer), then read off the next tokens."""
    answers = {tuple(passage[i:j]) for i in range(len(passage)) for j in range(i + 1, len(passage) + 1)}
    answers.add(tuple(NO_ANSWER))
    k, emitted = len(emitted), tuple(emitted)
    allowed = {a[k] for a in answers if len(a) > k and a[:k] == emitted}
    if emitted in answers:
        allowed.add(END)
    return allowed


def test_processor_matches_the_reference_on_random_walks():
    rng = random.Random(0)
    for _ in range(200):
        passage = [rng.randrange(1, 8) for _ in range(rng.randrange(1, 12))]  # small alphabet: many repeats
        processor = SpanConstrainedLogitsProcessor([passage], prompt_length=0, end_id=END, no_answer_ids=NO_ANSWER)
        emitted = []
        while True:
            expected = reference_allowed(passage, emitted)
            assert processor.allowed(passage, emitted) == expected, (passage, emitted)
            token = rng.choice(sorted(expected))
            if token == END:
                break
            emitted.append(token)


def test_masks_rows_by_item_and_beam():
    passages = [[5, 6, 7], [8, 9]]
    processor = SpanConstrainedLogitsProcessor(passages, prompt_length=2, end_id=END, no_answer_ids=NO_ANSWER, num_beams=2)
    input_ids = torch.tensor([[1, 1, 6], [1, 1, 5], [1, 1, 9], [1, 1, END]])  # rows: item 0 twice, item 1 twice
    scores = processor(input_ids, torch.zeros(4, 100))
    allowed = [set(torch.nonzero(row > float("-inf")).flatten().tolist()) for row in scores]
    assert allowed[0] == {7, END}
    assert allowed[1] == {6, END}
    assert allowed[2] == {END}
    assert allowed[3] == set(range(100))  # finished rows are left to generate's padding


def test_rejects_empty_inputs():
    with pytest.raises(ValueError, match="no_answer_ids"):
        SpanConstrainedLogitsProcessor([[1]], 0, END, [])
    with pytest.raises(ValueError, match="empty passages"):
        SpanConstrainedLogitsProcessor([[]], 0, END, NO_ANSWER)


def test_generate_emits_only_substrings_or_no_answer(tiny_gpt2, gpt2_tokenizer):
    tokenizer = gpt2_tokenizer
    passages = ["The show aired on PBS from 1983 to 1994.", "Tennis is a racket sport."]
    passage_ids = [tokenizer(" " + p)["input_ids"] for p in passages]
    prompts = [tokenizer(f"Question: when?\nPassage: {p}\nAnswer:")["input_ids"] for p in passages]
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[tokenizer.eos_token_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    newline = tokenizer("\n")["input_ids"][0]
    no_answer = tokenizer(" unanswerable")["input_ids"]
    for num_beams in (1, 3):
        processor = SpanConstrainedLogitsProcessor(passage_ids, width, newline, no_answer, num_beams=num_beams)
        output = tiny_gpt2.generate(
            input_ids=input_ids, attention_mask=mask, logits_processor=[processor], max_new_tokens=6,
            do_sample=False, num_beams=num_beams, eos_token_id=newline, pad_token_id=tokenizer.eos_token_id,
        )
        for item, row in enumerate(output[:, width:].tolist()):
            answer = row[: row.index(newline)] if newline in row else row
            substrings = {tuple(passage_ids[item][i:j]) for i in range(len(passage_ids[item])) for j in range(i + 1, len(passage_ids[item]) + 1)}
            assert tuple(answer) in substrings or answer == no_answer
