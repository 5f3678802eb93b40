"""Claim checkers: the window and sentence logic exactly (a stub checker), and every preset's architecture on a tiny
random model, batched against one pair at a time written out from the preset's input format."""

import json

import pytest

from faithkit.metrics.claim_checkers import HHEM_PROMPT, PRESETS, ClaimChecker
from faithkit.metrics.claim_windows import chosen_windows, document_windows, response_sentences
from faithkit.metrics.registry import load_metric

from tests.conftest import gpt2_bpe_files

TEN = "one two three four five six seven eight nine ten"


@pytest.fixture(scope="module")
def roberta_tokenizer(tmp_path_factory):
    """RoBERTa's tokenizer: GPT-2's byte-level BPE (the real merges) with <s> <pad> </s> <unk> first, as RoBERTa has
    them (its position embeddings need the padding id small); the other ids are GPT-2's, shifted."""
    from transformers import RobertaTokenizerFast

    folder = gpt2_bpe_files()
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {token: index for index, token in enumerate(specials)}
    vocab.update(
        {token: index + len(specials) for token, index in json.loads((folder / "encoder.json").read_text()).items()}
    )
    vocab["<mask>"] = len(vocab)
    path = tmp_path_factory.mktemp("roberta") / "vocab.json"
    path.write_text(json.dumps(vocab))
    return RobertaTokenizerFast(vocab=str(path), merges=str(folder / "vocab.bpe"))


def test_windows_overlap_and_the_last_ends_at_the_document_s_end(roberta_tokenizer):
    # one token per word
    assert document_windows(TEN, roberta_tokenizer, window=4, stride=3) == [
        "one two three four",
        "four five six seven",
        "seven eight nine ten",
    ]
    assert document_windows(TEN, roberta_tokenizer, window=4, stride=4) == [
        "one two three four",
        "five six seven eight",
        "seven eight nine ten",
    ]
    assert document_windows(TEN, roberta_tokenizer, window=10, stride=5) == [TEN]
    assert document_windows("  short text ", roberta_tokenizer, window=4, stride=2) == ["short text"]


def test_past_max_windows_the_windows_sharing_most_words_with_the_claims_are_scored(roberta_tokenizer):
    # "seven" and "eight" (short words do not count): windows 3 (two of them) and 2 (one) beat window 1 (none)
    assert chosen_windows(TEN, ["Seven eight."], roberta_tokenizer, window=4, stride=3, max_windows=2) == (
        ["four five six seven", "seven eight nine ten"],
        len("one two three "),
    )
    assert chosen_windows(TEN, ["Seven eight."], roberta_tokenizer, window=4, stride=3, max_windows=3) == (
        document_windows(TEN, roberta_tokenizer, window=4, stride=3),
        0,
    )


class LengthRecorder:
    """Wraps a tokenizer and records the longest text it is asked to encode."""

    def __init__(self, tokenizer):
        self.tokenizer, self.longest = tokenizer, 0

    def __call__(self, text, *args, **kwargs):
        self.longest = max(self.longest, len(text))
        return self.tokenizer(text, *args, **kwargs)


def test_a_huge_document_is_ranked_by_character_blocks_and_never_tokenised_whole(roberta_tokenizer):
    """Past max_windows windows of 8 characters a token (4 + 1 * 3 tokens: 56 characters), blocks of 32 characters
    every 16 are ranked first: the best holds "zebra giraffe" (characters 200 to 213), the next "zebra", and the two
    overlap, so one region of 48 characters (176 to 224) is tokenised; its windows are ranked as before."""
    document = "aaaa " * 40 + "zebra giraffe " + "bbbb " * 40
    recorder = LengthRecorder(roberta_tokenizer)
    windows, left_out = chosen_windows(document, ["A zebra, a giraffe."], recorder, window=4, stride=3, max_windows=2)
    assert windows == ["aaa aaaa a", "zebra giraffe"]
    assert left_out == len(document) - len("aaa aaaa a") - len("zebra giraffe")
    assert recorder.longest == 48


def test_a_row_says_how_many_windows_it_scored_and_what_it_left_out(roberta_tokenizer):
    def support(premises, claims, histories):
        return [[0.0, word_support(p, c)] for p, c in zip(premises, claims)]

    checker = ClaimChecker(
        "minicheck-roberta-large", window=4, stride=3, max_windows=2, support=support, tokenizer=roberta_tokenizer
    )
    cut, whole = checker.compute_rows([TEN, "seven eight"], None, ["Seven eight.", "Seven eight."])
    assert cut == {
        "minicheck_roberta_large": 1.0,
        "sentence_scores": [1.0],
        "windows": 2,
        "truncated_chars": len("one two three "),
        "truncated_from": "outside the windows",
    }
    assert whole == {"minicheck_roberta_large": 1.0, "sentence_scores": [1.0]}


def test_the_minicheck_call_gives_labels_and_probabilities(roberta_tokenizer):
    def support(premises, claims, histories):
        return [[0.0, word_support(p, c)] for p, c in zip(premises, claims)]

    checker = ClaimChecker("minicheck-roberta-large", window=4, stride=3, support=support, tokenizer=roberta_tokenizer)
    claims = ["Seven eight.", "Seven twelve.", "Eleven twelve."]
    labels, probabilities = checker.score([TEN] * 3, claims)
    assert probabilities == [row["minicheck_roberta_large"] for row in checker.compute_rows([TEN] * 3, None, claims)]
    assert probabilities == [1.0, 0.5, 0.0] and labels == [1, 0, 0]  # MiniCheck's rule: above 0.5
    result = checker.score(documents=[TEN], claims=["Seven eight."])  # MiniCheck's docs= is documents= here
    assert (result.labels, result.probabilities) == ([1], [1.0])


def test_the_minicheck_call_names_the_argument_it_cannot_read(roberta_tokenizer):
    def support(premises, claims, histories):
        return [[0.0, word_support(p, c)] for p, c in zip(premises, claims)]

    checker = ClaimChecker("minicheck-roberta-large", window=4, stride=3, support=support, tokenizer=roberta_tokenizer)
    for (documents, claims, histories), error, message in [
        (
            ([TEN, TEN], ["Seven."], None),
            ValueError,
            "documents, claims must have the same length (one of each per claim), got 2, 1",
        ),
        (
            ([TEN], ["Seven."], [[], []]),
            ValueError,
            "documents, claims, histories must have the same length (one of each per claim), got 1, 1, 2",
        ),
        (
            ([TEN, TEN], ["Seven.", " "], None),
            ValueError,
            "claims[1] is empty; each of claims must be a non-empty string",
        ),
        (
            (["", TEN], ["Seven.", "Eight."], None),
            ValueError,
            "documents[0] is empty; each of documents must be a non-empty string",
        ),
        (
            ([TEN], [None], None),
            ValueError,
            "claims[0] is a NoneType, not a string; each of claims must be a non-empty string",
        ),
        ((TEN, ["Seven."], None), TypeError, "documents must be a list, got a single string; wrap it in a list"),
    ]:
        with pytest.raises(error) as raised:
            checker.score(documents, claims, histories)
        assert str(raised.value) == message


def test_three_way_rows_name_their_sentences_and_the_minicheck_call_reads_the_verdict(roberta_tokenizer):
    def support(premises, claims, histories):  # P(supported) by shared words, P(generic) 0.1
        return [[0.9 * word_support(p, c), 0.1, 0.9 * (1 - word_support(p, c))] for p, c in zip(premises, claims)]

    checker = ClaimChecker("faithkit-checker", window=4, stride=3, support=support, tokenizer=roberta_tokenizer)
    row = checker.compute_rows([TEN], None, ["Two three. Eleven twelve!"])[0]
    assert [(s["text"], s["start"], s["end"], s["unsupported"]) for s in row["sentences"]] == [
        ("Eleven twelve!", 11, 25, pytest.approx(0.9)),  # the unsupported first
        ("Two three.", 0, 10, pytest.approx(0.0)),
    ]
    assert TEN[row["sentences"][1]["window_start"] : row["sentences"][1]["window_end"]] == "one two three four"
    assert row["faithkit_checker"] == pytest.approx(1 - row["faithkit_checker_hallucination"]) == pytest.approx(0.1)
    assert checker.score([TEN, TEN], ["Two three.", "Eleven twelve!"]) == (
        [1, 0],
        [pytest.approx(1.0), pytest.approx(0.1)],
    )


def test_response_sentences():
    assert response_sentences("Cats eat fish. Dogs bark!  Do birds sing?") == [
        "Cats eat fish.",
        "Dogs bark!",
        "Do birds sing?",
    ]
    assert response_sentences("no full stop") == ["no full stop"]


def word_support(premise: str, claim: str) -> float:
    """A stub checker: the share of the claim's words that the premise has."""
    words = claim.lower().rstrip(".!?").split()
    return sum(word in premise.split() for word in words) / len(words)


@pytest.mark.parametrize(
    "preset, combine",
    [("minicheck-roberta-large", min), ("alignscore-style", lambda scores: sum(scores) / len(scores))],
)
def test_each_sentence_takes_its_best_window_and_the_response_its_worst_sentence(roberta_tokenizer, preset, combine):
    calls = []

    def support(premises, claims, histories):
        """Class probabilities with word_support at the preset's "supported" index (the other classes unread)."""
        calls.append(len(premises))
        supported = PRESETS[preset].supported
        return [[0.0] * supported + [word_support(p, c)] for p, c in zip(premises, claims)]

    checker = ClaimChecker(preset, window=4, stride=3, support=support, tokenizer=roberta_tokenizer)
    responses = ["One two three. Eight nine ten.", "Two five. Ten eleven."]
    rows = checker.compute_rows([TEN, TEN], None, responses)
    windows = ["one two three four", "four five six seven", "seven eight nine ten"]
    for row, response in zip(rows, responses):
        expected = [max(word_support(w, s) for w in windows) for s in response_sentences(response)]
        assert row["sentence_scores"] == expected
        assert row[PRESETS[preset].score_key] == combine(expected)
    # by hand: "one two three" 1 (window 1); "eight nine ten" 1 (window 3); "two five" 1/2; "ten eleven" 1/2
    assert [row["sentence_scores"] for row in rows] == [[1.0, 1.0], [0.5, 0.5]]
    assert calls == [3 * 4]  # every (window, sentence) pair of the chunk in one call


def test_an_unknown_preset_or_bad_window_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown claim checker 'minicheck'; choose one of nli-roberta-large-mnli, "):
        ClaimChecker("minicheck", support=word_support)
    with pytest.raises(ValueError, match="stride between 1 and window, got window=4, stride=5"):
        ClaimChecker("hhem-2.1-open", window=4, stride=5, support=word_support)


# ---- every preset on a tiny random model of its architecture ----


def _tiny_roberta(tokenizer, labels: int):
    from transformers import RobertaConfig, RobertaForSequenceClassification

    return RobertaForSequenceClassification(
        RobertaConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=600,
            num_labels=labels,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    )


@pytest.fixture(scope="module")
def smollm2_tokenizer():
    """No T5 or DeBERTa-v3 SentencePiece model is here offline: their tiny models read SmolLM2's tokenizer."""
    from transformers import AutoTokenizer

    from faithkit.serving import models

    return AutoTokenizer.from_pretrained(models.resolve("smollm2-135m"))


def _tiny_deberta(tokenizer):
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    return DebertaV2ForSequenceClassification(
        DebertaV2Config(
            vocab_size=len(tokenizer),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=2048,
            num_labels=2,
            pad_token_id=tokenizer.pad_token_id,
        )
    )


def _t5_config(tokenizer, **extra):
    from transformers import T5Config

    return T5Config(
        vocab_size=len(tokenizer),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=2,
        num_heads=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
        **extra,
    )


def _save(model, tokenizer, folder):
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def _hhem_folder(tokenizer, root):
    """HHEM's hub layout: a config naming its foundation model, and weights of a T5ForTokenClassification under
    ``t5.``; the foundation (config and tokenizer) in its own folder."""
    from safetensors.torch import save_file
    from transformers import T5ForTokenClassification

    foundation = root / "foundation"
    config = _t5_config(tokenizer, num_labels=2)
    config.save_pretrained(foundation)
    tokenizer.save_pretrained(foundation)
    model = T5ForTokenClassification(config)
    hhem = root / "hhem"
    hhem.mkdir()
    save_file(
        {
            f"t5.{key}": value.contiguous()
            for key, value in model.state_dict().items()
            if not key.endswith("embed_tokens.weight")
        },
        hhem / "model.safetensors",
    )
    (hhem / "config.json").write_text(
        json.dumps({"model_type": "HHEMv2", "foundation": str(foundation), "prompt": HHEM_PROMPT})
    )
    return str(hhem), model


def _one_pair(preset, model, tokenizer, premise, claim) -> float:
    """P(supported) of one pair, the input written out as the authors' code writes it."""
    import torch

    eos = tokenizer.eos_token
    if preset == "minicheck-flan-t5-large":
        encoded = tokenizer("predict: " + premise + eos + claim, return_tensors="pt")
        logits = model(**encoded, decoder_input_ids=torch.tensor([[tokenizer.pad_token_id]])).logits[0, 0, [3, 209]]
        return torch.softmax(logits, -1)[1].item()
    if preset == "hhem-2.1-open":
        encoded = tokenizer(
            f"<pad> Determine if the hypothesis is true given the premise?\n\nPremise: {premise}"
            f"\n\nHypothesis: {claim}",
            return_tensors="pt",
        )
        return torch.softmax(model(**encoded).logits[0, 0], -1)[1].item()
    if preset.startswith("minicheck"):
        encoded = tokenizer(premise + eos + claim, return_tensors="pt")
        return torch.softmax(model(**encoded).logits[0], -1)[1].item()
    encoded = tokenizer(premise, claim, return_tensors="pt")  # NLI: the sentence pair, entailment is class 2
    return torch.softmax(model(**encoded).logits[0], -1)[2].item()


@pytest.mark.parametrize(
    "preset", [name for name, preset in PRESETS.items() if not preset.three_way]
)  # faithkit-checker: tests/test_checker.py
def test_every_preset_builds_and_batches_as_one_pair_at_a_time(preset, roberta_tokenizer, smollm2_tokenizer, tmp_path):
    import torch

    torch.manual_seed(0)
    architecture = PRESETS[preset].architecture
    if preset.startswith(("nli-", "alignscore", "minicheck-roberta")):
        tokenizer = roberta_tokenizer
        model = _tiny_roberta(tokenizer, labels=3 if PRESETS[preset].supported == 2 else 2)
        folder = _save(model, tokenizer, tmp_path / preset)
    else:
        tokenizer = smollm2_tokenizer
        if architecture == "t5-token-classification":
            folder, model = _hhem_folder(tokenizer, tmp_path)
        elif architecture == "seq2seq-label-tokens":
            from transformers import T5ForConditionalGeneration

            model = T5ForConditionalGeneration(_t5_config(tokenizer))
            folder = _save(model, tokenizer, tmp_path / preset)
        else:
            model = _tiny_deberta(tokenizer)
            folder = _save(model, tokenizer, tmp_path / preset)
    model.eval()
    metric = load_metric(preset, nli_model=folder, window=6, stride=4, batch_size=3, device="cpu")
    documents = [TEN, "Red apples grow on trees in the orchard behind the old farm house."]
    responses = ["Three comes after two. Ten is last.", "Apples are red."]
    rows = metric.compute_rows(documents, None, responses)
    key = PRESETS[preset].score_key
    for document, response, row in zip(documents, responses, rows):
        windows = document_windows(document, metric.tokenizer, 6, 4)
        expected = [
            max(_one_pair(preset, model, tokenizer, w, s) for w in windows) for s in response_sentences(response)
        ]
        assert row["sentence_scores"] == pytest.approx(expected, abs=1e-5)
        combine = min if PRESETS[preset].sentences == "min" else (lambda v: sum(v) / len(v))
        assert row[key] == pytest.approx(combine(expected), abs=1e-5)
        assert 0 < row[key] < 1


def test_a_checkpoint_with_too_few_classes_is_refused(roberta_tokenizer, tmp_path):
    from faithkit.errors import ConfigError

    folder = _save(_tiny_roberta(roberta_tokenizer, labels=2), roberta_tokenizer, tmp_path / "two-class")
    with pytest.raises(
        ConfigError, match="has 2 classes, so it cannot be read as nli-roberta-large-mnli, whose 'supported' class is 2"
    ):
        load_metric("nli-roberta-large-mnli", nli_model=folder, device="cpu")


def test_the_leaderboard_ranks_a_claim_checker_with_its_options(roberta_tokenizer, tmp_path):
    """``meta-eval labels`` scores a claim checker (``--nli-model``, ``--window``) into its resumable file."""
    import csv

    from faithkit.data import read_results
    from tests.cli.helpers import mann_whitney, run_main, write_jsonl

    folder = _save(_tiny_roberta(roberta_tokenizer, labels=2), roberta_tokenizer, tmp_path / "checker")
    responses = ["One two. Three four.", "Eleven twelve.", "Nine ten.", "Five six seven.", "Apples. Pears."]
    labels = ["yes", "no", "yes", "yes", "no"]
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"document": TEN, "response": r, "human": label} for r, label in zip(responses, labels)],
    )
    out = tmp_path / "out"
    code = run_main(
        "meta-eval",
        "labels",
        "--input",
        rows,
        "--label-column",
        "human",
        "--positive",
        "yes",
        "--metrics",
        "minicheck-roberta-large,overlap-f1",
        "--nli-model",
        folder,
        "--window",
        "4",
        "--stride",
        "3",
        "--resamples",
        "50",
        "--out",
        out,
    )
    assert code == 0
    records = read_results(out / "scores" / "minicheck-roberta-large.jsonl")
    metric = load_metric("minicheck-roberta-large", nli_model=folder, window=4, stride=3, device="cpu")
    expected = metric.compute_rows([TEN] * 5, None, responses)
    assert [r["minicheck_roberta_large"] for r in records] == pytest.approx(
        [e["minicheck_roberta_large"] for e in expected], abs=1e-6
    )
    with open(out / "results.csv", newline="") as handle:
        results = {r["score"]: r for r in csv.DictReader(handle)}
    assert float(results["minicheck_roberta_large"]["auroc"]) == pytest.approx(
        mann_whitney([r["minicheck_roberta_large"] for r in records], [label == "yes" for label in labels])
    )


@pytest.mark.parametrize("where", ["faithkit-checker", "minimal-edit", "q2"])
def test_a_response_longer_than_spacy_parses_is_the_rows_error_in_faithkits_words(where):
    """Issue 52, case 6: a 2 MB response once gave spaCy's raw E088 text as the row's error. Q² (with stub
    stages, as tests/test_q2_rules.py runs it) refuses it before any stage is asked."""
    import spacy

    from faithkit.metrics.claim_windows import response_sentences
    from faithkit.metrics.minimal_edit import contrast_features
    from tests.test_q2_rules import StubNLI, StubQA, StubQG, make_metric

    stages = StubQG({}), StubQA({}), StubNLI({})

    response = "Apples ripen. " * 150_000  # 2.1 million characters
    said = (
        f"the response is {len(response):,} characters, more than spaCy parses at once (1,000,000, its "
        "nlp.max_length); shorten it"
    )
    with pytest.raises(ValueError) as refused:
        if where == "faithkit-checker":
            response_sentences(response)
        elif where == "minimal-edit":
            contrast_features(None, ["Apples ripen in autumn."], [["When?"]], [response], nlp=spacy.blank("en"))
        else:
            make_metric(*stages).compute_rows(["Apples ripen in autumn."] * 2, None, ["In autumn.", response])
    assert str(refused.value) == said
    assert stages[0].calls == 0 and stages[1].calls == stages[2].calls == []
