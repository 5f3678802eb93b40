"""faithkit's own claim checker: an offline LM with a LoRA adapter, asked whether a document supports a response.

The input is a short prompt (:data:`PROMPT`: document window, the last turns of the dialogue, one response
sentence); the answer is read from the LM's next-token logits of three label words (:data:`LABEL_WORDS`),
as MiniCheck-Flan-T5 reads its two: a softmax over them gives P(supported), P(generic: says nothing the
document could settle) and P(unsupported). Training (:mod:`faithkit.checker.training`) uses the same
prompt and the same three logits, so the two cannot drift apart.

The adapters beside this module (:data:`ADAPTERS`) were trained by ``faithkit checker train`` (each folder's model
card, ``README.md``, says on what and how long); they load with no network. The claim-checker metrics
``faithkit-checker`` (the :data:`DEFAULT_ADAPTER`), ``faithkit-checker-smollm2`` and ``faithkit-checker-gemma``
(:mod:`.claim_checkers`) cut documents into windows and responses into sentences and call :class:`CheckerModel` on
the pairs; an adapter folder's ``reading.json`` (:mod:`.checker_reading`) says how its three probabilities read as
one P(faithful).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..prompts import as_history
from ..serving.model_names import check_adapter_folder, is_adapter_folder
from .checker_reading import Reading

LABELS = ("supported", "generic", "unsupported")
LABEL_WORDS = (" Yes", " Generic", " No")
"""The answer word of each label, in :data:`LABELS` order; each is one token of SmolLM2's and Gemma's vocabularies."""
PROMPT = (
    "Document: {document}\n"
    "Last turn:\n{history}\n"
    "Response: {response}\n"
    "Does the document support every claim of the response? Answer Yes, No, or Generic if it makes no claim:"
)
HISTORY_CHARS = 250
"""The last history turn is cut to its last this many characters (the input is for the document, not the chat)."""
RESPONSE_CHARS = 600
ADAPTERS = {
    "smollm2": Path(__file__).with_name("checker_adapter"),
    "gemma": Path(__file__).with_name("checker_adapter_gemma"),
}
"""The adapter folders of faithkit's checker by base model (``adapter_config.json`` names it): the presets
``faithkit-checker-<name>`` read them."""
DEFAULT_ADAPTER = "gemma"
"""The adapter of ``faithkit-checker`` (its score keys stay ``faithkit_checker…`` whichever it is)."""
ADAPTER = ADAPTERS[DEFAULT_ADAPTER]


def prompt(document: str, history: str | Sequence[str] | None, response: str) -> str:
    """The checker's input text for one (document window, history, response sentence): only the last turn, and
    that cut to :data:`HISTORY_CHARS`, since the question is about the document.

    Args:
        document (`str`): the document window.
        history (`str`, `Sequence[str]` or None): the dialogue so far (its last turn is shown).
        response (`str`): the response sentence, cut to :data:`RESPONSE_CHARS`.

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import prompt
    >>> print(prompt("Emperor penguins live only in Antarctica.", ["Hi!", "Where do they live?"], "In the Arctic."))
    Document: Emperor penguins live only in Antarctica.
    Last turn:
    - Where do they live?
    Response: In the Arctic.
    Does the document support every claim of the response? Answer Yes, No, or Generic if it makes no claim:
    ```
    """
    lines = "\n".join(f"- {turn.strip()[-HISTORY_CHARS:]}" for turn in as_history(history)[-1:]) or "-"
    return PROMPT.format(document=document.strip(), history=lines, response=response.strip()[:RESPONSE_CHARS])


def label_token_ids(tokenizer) -> list[int]:
    """The token id of each of :data:`LABEL_WORDS`; a tokenizer that splits one is a :class:`ConfigError` (the
    answer is read from one next-token logit per label).

    Args:
        tokenizer (`PreTrainedTokenizerBase`): the checker LM's tokenizer.

    Examples:

    ```python
    >>> from transformers import AutoTokenizer
    >>> from faithkit.serving import models
    >>> from faithkit.metrics.faithkit_checker import label_token_ids
    >>> tokenizer = AutoTokenizer.from_pretrained(models.resolve("smollm2-135m"))
    >>> tokenizer.convert_ids_to_tokens(label_token_ids(tokenizer))
    ['ĠYes', 'ĠGeneric', 'ĠNo']
    ```
    """
    ids = []
    for word in LABEL_WORDS:
        pieces = tokenizer(word, add_special_tokens=False)["input_ids"]
        if len(pieces) != 1:
            raise ConfigError(
                f"the checker's label word {word!r} is {len(pieces)} tokens for this tokenizer; it must be one"
            )
        ids.append(pieces[0])
    return ids


def encode(tokenizer, texts: Sequence[str]):
    """Right-padded input ids for prompts, with the BOS token where the tokenizer's model needs one (Gemma).

    Args:
        tokenizer (`PreTrainedTokenizerBase`): the checker LM's tokenizer, padding on the right.
        texts (`Sequence[str]`): the prompts (:func:`prompt`).

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import encode, load_checker
    >>> checker = load_checker()
    >>> encode(checker.tokenizer, ["Short.", "A longer prompt."])["attention_mask"].tolist()
    [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    ```
    """
    return tokenizer(list(texts), padding=True, return_tensors="pt", add_special_tokens=True)


def label_logits(model, encoded, label_ids: Sequence[int]):
    """The three label logits at each prompt's last token: the LM head's rows of the label words applied to the
    final hidden state (the full vocabulary's logits are never computed).

    Args:
        model (`PreTrainedModel`): the checker LM (a peft wrapper too).
        encoded (`BatchEncoding`): :func:`encode`'s right-padded prompts.
        label_ids (`Sequence[int]`): :func:`label_token_ids`.

    Examples:

    ```python
    >>> import torch
    >>> from faithkit.metrics.faithkit_checker import encode, label_logits, load_checker, prompt
    >>> checker = load_checker()
    >>> encoded = encode(checker.tokenizer, [prompt("Emperor penguins live only in Antarctica.", None, "I love penguins!")])
    >>> with torch.no_grad():
    ...     logits = label_logits(checker.model, encoded, checker.label_ids)
    >>> logits.shape, logits.argmax(-1).tolist()  # the Generic word's logit is the highest
    (torch.Size([1, 3]), [1])
    ```
    """
    import torch

    lengths = encoded["attention_mask"].sum(dim=1) - 1
    hidden = backbone(model)(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"]).last_hidden_state
    last = hidden[torch.arange(hidden.shape[0]), lengths]
    weights = model.get_output_embeddings().weight[list(label_ids)]
    return last @ weights.T.to(last.dtype)


def backbone(model):
    """The transformer body under the LM head (through a peft wrapper if there is one), whose last hidden state
    :func:`label_logits` reads.

    Args:
        model (`PreTrainedModel`): a causal LM, or a peft model around one.

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import backbone, load_checker
    >>> type(backbone(load_checker().model)).__name__
    'Gemma3TextModel'
    ```
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder() if hasattr(base, "get_decoder") else base.model


class CheckerModel:
    """P(supported), P(generic), P(unsupported) for (window, history, sentence) triples: the checker's scorer, which
    :class:`~faithkit.metrics.claim_checkers.ClaimChecker` calls on every (window, sentence) pair.

    The prompts go through :class:`~faithkit.serving.scoring.TokenScorer`: their token sequences form a prefix tree,
    so the part a response's sentences share (the document window and the last turn, before ``Response:``) runs once
    and its key/value cache serves every sentence, and identical prompts run once; rows run in length-sorted batches
    of ``batch_size``. The label words' log-probabilities at each prompt's last token are read from the same logits
    the one-prompt-at-a-time reference computes, so only float rounding differs.

    Args:
        model (`PreTrainedModel`): the checker LM, its adapter merged in (:func:`load_checker`).
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer (set here to pad on the right).
        batch_size (`int`, defaults to 8): prompts per forward pass.
        reading (`Reading`, *optional*): how the three read as P(faithful) (:mod:`.checker_reading`; default: the
            unfitted reading, 1 - P(unsupported)).
        share_prefixes (`bool`, defaults to True): False runs every prompt whole (for comparison).

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import load_checker
    >>> checker = load_checker()  # a CheckerModel: the adapter that ships with faithkit, on smollm2-135m
    >>> document = "Emperor penguins live only in Antarctica. They breed during the Antarctic winter."
    >>> responses = ["They live only in Antarctica.", "They live in the Arctic, close to polar bears.", "I love penguins!"]
    >>> probabilities = checker([document] * 3, responses, [["Where do emperor penguins live?"]] * 3)
    >>> [[round(p, 2) for p in row] for row in probabilities]  # P(supported), P(generic), P(unsupported)
    [[0.7, 0.0, 0.29], [0.21, 0.05, 0.74], [0.0, 0.99, 0.0]]
    ```
    """

    def __init__(
        self, model, tokenizer, batch_size: int = 8, reading: Reading | None = None, share_prefixes: bool = True
    ):
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.label_ids = label_token_ids(tokenizer)
        self.reading = reading or Reading()
        self.share_prefixes = share_prefixes

    def __call__(
        self, premises: Sequence[str], claims: Sequence[str], histories: Sequence[Sequence[str]]
    ) -> list[list[float]]:
        import torch

        from ..serving.scoring import TokenScorer

        texts = [prompt(p, h, c) for p, h, c in zip(premises, histories, claims)]
        if not texts:
            return []
        encoded = self.tokenizer(texts, add_special_tokens=True)["input_ids"]
        requests = [(ids, self.label_ids[:1]) for ids in encoded]  # read after the prompt: where the answer goes
        scorer = TokenScorer(self.model, batch_size=self.batch_size, share_prefixes=self.share_prefixes)
        evidence = scorer.evidence(requests, extra_ids=[[self.label_ids]] * len(requests))
        return [torch.softmax(item.extra_logprobs[0].float(), dim=-1).tolist() for item in evidence]


def load_checker(name: str | None = None, device=None, dtype=None, batch_size: int = 8) -> CheckerModel:
    """The checker from ``name``: an adapter folder (``adapter_config.json``; its base model is loaded by
    :func:`faithkit.serving.models.load`, offline names included, and the adapter merged in) or a full causal-LM folder
    or hub id. Default: the adapter of ``faithkit-checker``. Its reading (P(faithful)) is the folder's
    ``reading.json``, if it has one.

    Args:
        name (`str`, *optional*): an adapter folder, a causal-LM folder or hub id (default: the shipped adapter).
        device (`str`, *optional*): where the model runs (default: a GPU if any).
        dtype (`str`, *optional*): its precision (:data:`faithkit.serving.precision.DTYPES`).
        batch_size (`int`, defaults to 8): prompts per forward pass.

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import load_checker
    >>> checker = load_checker()
    >>> type(checker).__name__, checker.tokenizer.convert_ids_to_tokens(checker.label_ids)
    ('CheckerModel', ['▁Yes', '▁Generic', '▁No'])
    ```
    """
    from ..serving import models

    folder = Path(name).expanduser() if name else ADAPTER
    reading = Reading.load(folder if folder.is_dir() else None)
    if not is_adapter_folder(folder):
        if name is None:
            raise ConfigError(f"faithkit's checker adapter is missing from {ADAPTER}; reinstall faithkit")
        model, tokenizer = models.load(name, kind="causal", device=device, dtype=dtype)
        return CheckerModel(model, tokenizer, batch_size, reading)
    from peft import PeftModel

    from ..serving.third_party import hidden_warnings

    model, tokenizer = models.load(check_adapter_folder(folder), kind="causal", device=device, dtype=dtype)
    with hidden_warnings():
        merged = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    return CheckerModel(merged.eval(), tokenizer, batch_size, reading)


def combine(sentences: Sequence[Sequence[float]]) -> list[float]:
    """A response's (supported, generic, unsupported) from its sentences' (each its best window's).

    One unsupported sentence makes the response unsupported; otherwise it is supported if some sentence is
    and generic if all are: ``U = max U_s``, ``S = (1 - U) * max S_s / (S_s + G_s)``, ``G = 1 - U - S``.
    A single sentence's probabilities are returned as they are.

    Args:
        sentences (`Sequence[Sequence[float]]`): each sentence's (supported, generic, unsupported).

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import combine
    >>> [round(p, 4) for p in combine([[0.9, 0.05, 0.05], [0.2, 0.1, 0.7]])]  # one unsupported sentence
    [0.2842, 0.0158, 0.7]
    >>> [round(p, 4) for p in combine([[0.9, 0.05, 0.05], [0.3, 0.6, 0.1]])]  # one supported, one generic
    [0.8526, 0.0474, 0.1]
    ```
    """
    if len(sentences) == 1:
        return list(sentences[0])
    unsupported = max(row[2] for row in sentences)
    supported = (1 - unsupported) * max(row[0] / max(row[0] + row[1], 1e-12) for row in sentences)
    return [supported, max(0.0, 1 - unsupported - supported), unsupported]


def three_way_row(
    judged: Sequence[tuple[Sequence[float], tuple[int, int]]],
    sentences: Sequence[tuple[int, int]],
    response: str,
    reading: Reading,
    keys: Sequence[str],
) -> dict:
    """A response's row from its sentences' ``judged`` (each: its best window's three probabilities and that window's
    character span in the document) and their ``sentences`` spans in ``response``: under ``keys`` P(faithful) (the
    ``reading`` of :func:`combine` of the sentences'), the verdict (1 faithful, 0 not) and the three; and
    ``sentences``, the unsupported first, each with its text, ``start`` and ``end`` in the response, its three
    probabilities and the document window it was judged on (``window_start``, ``window_end``).

    Args:
        judged (`Sequence[tuple[Sequence[float], tuple[int, int]]]`): per sentence, its best window's three
            probabilities and that window's span in the document.
        sentences (`Sequence[tuple[int, int]]`): the sentences' spans in the response.
        response (`str`): the response.
        reading (`Reading`): how the three read as P(faithful) (:mod:`.checker_reading`).
        keys (`Sequence[str]`): the preset's score keys (:attr:`~.claim_checkers.CheckerPreset.score_keys`).

    Examples:

    ```python
    >>> from faithkit.metrics.checker_reading import Reading
    >>> from faithkit.metrics.faithkit_checker import three_way_row
    >>> response = "It is 330 metres tall. It opened in 1925."
    >>> judged = [([0.8, 0.1, 0.1], (0, 36)), ([0.1, 0.1, 0.8], (0, 36))]
    >>> keys = ("c", "c_verdict", "c_supported", "c_generic", "c_hallucination")
    >>> row = three_way_row(judged, [(0, 22), (23, 41)], response, Reading(), keys)
    >>> round(row["c"], 2), row["c_verdict"], [s["text"] for s in row["sentences"]]  # the unsupported first
    (0.2, 0.0, ['It opened in 1925.', 'It is 330 metres tall.'])
    ```
    """
    combined = combine([probabilities for probabilities, _ in judged])
    faithful = reading.faithful(combined)
    named = [
        {
            "text": response[start:end],
            "start": start,
            "end": end,
            **dict(zip(LABELS, probabilities)),
            "window_start": window[0],
            "window_end": window[1],
        }
        for (start, end), (probabilities, window) in zip(sentences, judged)
    ]
    return {
        keys[0]: faithful,
        keys[1]: float(reading.verdict(faithful)),
        **dict(zip(keys[2:], combined)),
        "sentences": sorted(named, key=lambda sentence: -sentence["unsupported"]),
    }
