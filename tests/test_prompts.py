"""The views of a context: layout, special tokens, truncation, chat templates."""

import pytest

from faithkit.prompts import PromptTemplate, as_history, start_ids


def _decode(tokenizer, ids):
    return tokenizer.decode(ids)


def test_views_follow_the_authors_layout(gpt2_tokenizer):
    template = PromptTemplate()
    history = ["User: Hi!", "Agent: Hello."]
    both = template.context(gpt2_tokenizer, "Paris is in France.", history)
    only_history = template.context(gpt2_tokenizer, None, history)
    assert _decode(gpt2_tokenizer, both.ids) == "Document: Paris is in France.\n\nUser: Hi!\nAgent: Hello.\nAgent:"
    assert _decode(gpt2_tokenizer, only_history.ids) == "User: Hi!\nAgent: Hello.\nAgent:"
    assert both.ids[-len(only_history.ids) :] == only_history.ids  # the history view is a suffix of the full one
    assert template.context_text("Paris is in France.", history) == _decode(gpt2_tokenizer, both.ids)
    assert _decode(gpt2_tokenizer, template.response_ids(gpt2_tokenizer, "It is.")) == " It is."


def test_history_accepts_a_string_a_list_or_nothing():
    assert as_history("User: hi") == ["User: hi"]
    assert as_history(["a", "b"]) == ["a", "b"]
    assert as_history(None) == [] and as_history("") == []


def test_gpt2_gets_no_start_token(gpt2_tokenizer):
    assert start_ids(gpt2_tokenizer) == []


def test_long_document_keeps_its_end_and_framing(gpt2_tokenizer, monkeypatch):
    """Cut by characters first (the document is longer than 8 characters per token of room), then exactly by
    tokens: the same ids as cutting the whole tokenised text."""
    import faithkit.prompts

    template = PromptTemplate()
    document = " ".join(f"w{i}" for i in range(200))
    full = template.context(gpt2_tokenizer, document, ["User: q?"])
    cut = template.context(gpt2_tokenizer, document, ["User: q?"], max_tokens=60)
    assert 58 <= len(cut.ids) <= 60 and cut.truncated_chars == len(document) - 8 * 60 and cut.truncated_tokens > 0
    monkeypatch.setattr(faithkit.prompts, "CHARS_PER_TOKEN", 10**9)  # no character budget: all of it tokenised
    whole = template.context(gpt2_tokenizer, document, ["User: q?"], max_tokens=60)
    assert whole.truncated_chars == 0 and whole.truncated_tokens == len(full.ids) - len(whole.ids)
    # the same end kept, to a word where re-tokenising the cut shifts a token boundary
    kept, kept_whole = _decode(gpt2_tokenizer, cut.ids).split(), _decode(gpt2_tokenizer, whole.ids).split()
    assert kept[-25:] == kept_whole[-25:] and abs(len(kept) - len(kept_whole)) <= 1
    monkeypatch.undo()
    text = _decode(gpt2_tokenizer, cut.ids)
    assert text.startswith("Document: ") and text.endswith("w199\n\nUser: q?\nAgent:")
    assert "w0 " not in text


def test_history_is_cut_after_the_document(gpt2_tokenizer):
    template = PromptTemplate()
    history = [f"User: turn {i}" for i in range(30)]
    cut = template.context(gpt2_tokenizer, "short doc", history, max_tokens=40)
    text = _decode(gpt2_tokenizer, cut.ids)
    assert len(cut.ids) == 40 and text.endswith("User: turn 29\nAgent:")
    with pytest.raises(ValueError, match="cannot fit in 3 tokens"):
        template.context(gpt2_tokenizer, "doc", ["q"], max_tokens=3)


def test_template_fields_are_checked():
    with pytest.raises(ValueError, match=r"PromptTemplate.document must contain \{document\}"):
        PromptTemplate(document="Doc:")
    with pytest.raises(ValueError, match=r"PromptTemplate.response must contain \{response\}"):
        PromptTemplate(response=" ")
    with pytest.raises(ValueError, match=r"PromptTemplate.system_document must contain \{document\}"):
        PromptTemplate(chat=True, system_document="Doc")


def test_chat_template_puts_the_document_in_the_system_turn(smollm2):
    _, tokenizer = smollm2
    template = PromptTemplate(chat=True)
    both = tokenizer.decode(template.context(tokenizer, "Paris is in France.", ["Where is Paris?"]).ids)
    only_history = tokenizer.decode(template.context(tokenizer, None, ["Where is Paris?"]).ids)
    assert "<|im_start|>system\nAnswer using only this document.\n\nDocument: Paris is in France.<|im_end|>" in both
    assert both.endswith("<|im_start|>user\nWhere is Paris?<|im_end|>\n<|im_start|>assistant\n")
    # the views differ by the document alone: same instruction, no default persona from the chat template
    assert only_history == both.replace("\n\nDocument: Paris is in France.", "", 1)
    assert "SmolLM" not in only_history
    with pytest.raises(ValueError, match="chat templates need a tokenizer"):
        template.context_text("d", ["h"])
