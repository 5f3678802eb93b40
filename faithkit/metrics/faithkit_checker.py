"""faithkit's own claim checker: an offline LM with a LoRA adapter, asked whether a document supports a response.

The input is a short prompt (:data:`PROMPT`: document window, the last turns of the dialogue, one response
sentence); the answer is read from the LM's next-token logits of three label words (:data:`LABEL_WORDS`),
as MiniCheck-Flan-T5 reads its two: a softmax over them gives P(supported), P(generic: says nothing the
document could settle) and P(unsupported). Training (:mod:`faithkit.checker.training`) uses the same
prompt and the same three logits, so the two cannot drift apart.

The adapter that ships in ``checker_adapter/`` beside this module was trained by ``faithkit checker train``
on ``smollm2-135m`` (its model card, ``checker_adapter/README.md``, says on what and how long); it loads
with no network. The claim-checker metric ``faithkit-checker`` (:mod:`.claim_checkers`) cuts documents into
windows and responses into sentences and calls :class:`CheckerModel` on the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..prompts import as_history
from ..serving.model_names import check_adapter_folder, is_adapter_folder

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
ADAPTER = Path(__file__).with_name("checker_adapter")
"""The shipped adapter folder (``adapter_config.json`` names its base model)."""


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
    [[1, 1, 0, 0], [1, 1, 1, 1]]
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
    'LlamaModel'
    ```
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder() if hasattr(base, "get_decoder") else base.model


class CheckerModel:
    """P(supported), P(generic), P(unsupported) for (window, history, sentence) triples, in length-sorted batches:
    the checker's scorer, which :class:`~faithkit.metrics.claim_checkers.ClaimChecker` calls on every (window,
    sentence) pair.

    Args:
        model (`PreTrainedModel`): the checker LM, its adapter merged in (:func:`load_checker`).
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer (set here to pad on the right).
        batch_size (`int`, defaults to 8): prompts per forward pass.

    Examples:

    ```python
    >>> from faithkit.metrics.faithkit_checker import load_checker
    >>> checker = load_checker()  # a CheckerModel: the adapter that ships with faithkit, on smollm2-135m
    >>> document = "Emperor penguins live only in Antarctica. They breed during the Antarctic winter."
    >>> responses = ["They live only in Antarctica.", "They live in the Arctic, close to polar bears.", "I love penguins!"]
    >>> probabilities = checker([document] * 3, responses, [["Where do emperor penguins live?"]] * 3)
    >>> [[round(p, 2) for p in row] for row in probabilities]  # P(supported), P(generic), P(unsupported)
    [[0.58, 0.17, 0.24], [0.35, 0.07, 0.58], [0.0, 1.0, 0.0]]
    ```
    """

    def __init__(self, model, tokenizer, batch_size: int = 8):
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.label_ids = label_token_ids(tokenizer)

    def __call__(
        self, premises: Sequence[str], claims: Sequence[str], histories: Sequence[Sequence[str]]
    ) -> list[list[float]]:
        import torch

        from ..serving import models

        texts = [prompt(p, h, c) for p, h, c in zip(premises, histories, claims)]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        probabilities: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            encoded = encode(self.tokenizer, [texts[i] for i in chosen]).to(models.input_device(self.model))
            with torch.no_grad():
                rows = torch.softmax(label_logits(self.model, encoded, self.label_ids).float(), dim=-1).tolist()
            for index, row in zip(chosen, rows):
                probabilities[index] = row
        return probabilities


def load_checker(name: str | None = None, device=None, dtype=None, batch_size: int = 8) -> CheckerModel:
    """The checker from ``name``: an adapter folder (``adapter_config.json``; its base model is loaded by
    :func:`faithkit.serving.models.load`, offline names included, and the adapter merged in) or a full causal-LM folder
    or hub id. Default: the adapter that ships with faithkit.

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
    ('CheckerModel', ['ĠYes', 'ĠGeneric', 'ĠNo'])
    ```
    """
    from ..serving import models

    folder = Path(name).expanduser() if name else ADAPTER
    if not is_adapter_folder(folder):
        if name is None:
            raise ConfigError(f"faithkit's checker adapter is missing from {ADAPTER}; reinstall faithkit")
        model, tokenizer = models.load(name, kind="causal", device=device, dtype=dtype)
        return CheckerModel(model, tokenizer, batch_size)
    from peft import PeftModel

    from ..serving.third_party import hidden_warnings

    model, tokenizer = models.load(check_adapter_folder(folder), kind="causal", device=device, dtype=dtype)
    with hidden_warnings():
        merged = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    return CheckerModel(merged.eval(), tokenizer, batch_size)


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
