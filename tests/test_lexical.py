"""The lexical baselines of the Q² paper: token-F1 overlap and BLEU against the knowledge."""

import pytest

from faithkit.metrics.lexical import TextOverlap, bleu_vs_knowledge, content_tokens, token_f1_overlap


def test_content_tokens_drop_stop_words_and_punctuation_and_lowercase():
    assert content_tokens("The Eiffel Tower is 330 metres tall, and I love it!") == [
        "eiffel",
        "tower",
        "330",
        "metres",
        "tall",
        "love",
    ]


def test_token_f1_overlap_by_hand():
    # knowledge: eiffel tower 330 metres tall (5); response: tower tall (2); 2 shared
    # precision 1, recall 2/5 -> F1 = 2 * 0.4 / 1.4
    assert token_f1_overlap("The Eiffel Tower is 330 metres tall.", "the tower is tall") == pytest.approx(0.8 / 1.4)
    assert token_f1_overlap("Red apples grow on trees.", "red apples grow on trees") == 1.0
    assert token_f1_overlap("Red apples grow on trees.", "blue cars") == 0.0
    assert token_f1_overlap("Red apples.", "the and of") == 0.0  # only stop words


def test_token_f1_overlap_clips_repeated_words():
    # response: apple apple apple (3), knowledge: apple pie (2); 1 shared -> P 1/3, R 1/2, F1 0.4
    assert token_f1_overlap("apple pie", "apple apple apple") == pytest.approx(0.4)


def test_bleu_vs_knowledge_is_case_insensitive_and_on_0_100():
    assert bleu_vs_knowledge("Apple is red in color.", "apple is red in color.") == pytest.approx(100.0)
    assert 0.0 < bleu_vs_knowledge("apple is orange in color", "Apple is red in color.") < 100.0
    assert bleu_vs_knowledge("apple is orange", "xyz") == 0.0


def test_text_overlap_metric_objects():
    metric = TextOverlap("overlap-f1")
    rows = metric.compute_rows(["red apples grow on trees"], [["User: hi"]], ["red apples"])
    assert rows == [{"overlap_f1": pytest.approx(2 / 3)}]
    result = TextOverlap("document-bleu").compute(["a b c d"], [[]], ["a b c d"])
    assert result == {"document_bleu": [pytest.approx(100.0)], "mean_document_bleu": pytest.approx(100.0)}
    with pytest.raises(ValueError, match="same length"):
        metric.compute_rows(["a"], [], ["b"])
    with pytest.raises(ValueError, match="unknown baseline kind"):
        TextOverlap("rouge")
