"""A batch's layout: the contexts as token rows (both views, padded as the model reads them), and the rows back as text.

The conditioned and history-only views come from :class:`faithkit.prompts.PromptTemplate`,
the same views PMI-FAITH scores, so decoding and measuring agree on what "the document's
effect" is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import torch

from ..serving import models
from ..errors import ConfigError
from ..prompts import PromptTemplate
from .generation_options import GenerationOptions, default_template

logger = logging.getLogger(__name__)


def pad_token_id(tokenizer) -> int:
    """The tokenizer's pad token, or its end-of-sequence token when it has none (GPT-2, many base LMs).

    Args:
        tokenizer (`PreTrainedTokenizerBase`): the model's tokenizer.

    Examples:

    ```python
    >>> from types import SimpleNamespace
    >>> from faithkit.decoding import pad_token_id
    >>> pad_token_id(SimpleNamespace(pad_token_id=None, eos_token_id=2))  # GPT-2's case
    2
    ```
    """
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if candidate is not None:
            return int(candidate)
    raise ValueError("the tokenizer has neither a pad token nor an eos token; set tokenizer.pad_token first")


def build_inputs(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    template: PromptTemplate | None = None,
    options: GenerationOptions | None = None,
    views: int = 2,
) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask`` with 2B rows: the B conditioned views, then the B history-only views.

    ``views=1`` gives the B conditioned views alone (plain decoding).

    Decoder-only rows are left-padded so every row ends where generation starts; seq2seq rows
    are the encoder inputs (the decoder starts identically for both halves). Over-long
    contexts keep their end: at most ``options.max_context_tokens``, and never more than the model's
    context window leaves beside ``options.max_new_tokens`` (without options: the whole window; a warning counts
    the contexts that limit cut).

    Args:
        model (`PreTrainedModel`): the generator (its config: encoder-decoder or not, context window).
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer.
        documents (`Sequence[str]`): one grounding document per context.
        histories (`Sequence`): one dialogue history per context, a list of turns or one string.
        template (`PromptTemplate`, *optional*): the prompt layout; unset, :func:`default_template` (the chat
            template of an instruct model), as PMI-FAITH lays out the same views.
        options (`GenerationOptions`, *optional*): the budgets ``max_context_tokens`` and ``max_new_tokens``.
        views (`int`, defaults to 2): 2 for the two-view strategies, 1 for plain decoding.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import build_inputs
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> inputs = build_inputs(model, tokenizer, ["The Eiffel Tower is 330 metres tall."],
    ...                       [["How tall is the Eiffel Tower?"]])
    >>> inputs["input_ids"].shape  # two views of one context, left-padded to one width
    torch.Size([2, 44])
    >>> for row, mask in zip(inputs["input_ids"], inputs["attention_mask"]):
    ...     print(tokenizer.decode(row[mask.bool()]))
    <|im_start|>system
    Answer using only this document.
    <BLANKLINE>
    Document: The Eiffel Tower is 330 metres tall.<|im_end|>
    <|im_start|>user
    How tall is the Eiffel Tower?<|im_end|>
    <|im_start|>assistant
    <BLANKLINE>
    <|im_start|>system
    Answer using only this document.<|im_end|>
    <|im_start|>user
    How tall is the Eiffel Tower?<|im_end|>
    <|im_start|>assistant
    ```
    """
    if len(documents) != len(histories):
        raise ValueError(
            f"documents and histories must have the same length, got {len(documents)} and {len(histories)}"
        )
    if not len(documents):
        raise ValueError("no contexts given: documents and histories are empty")
    if views not in (1, 2):
        raise ValueError(f"views must be 1 (conditioned) or 2 (conditioned, then history-only), got {views}")
    models.check_head(model)
    pairs: list[tuple[str | None, Any]] = [(document, history) for document, history in zip(documents, histories)]
    if views == 2:
        pairs += [(None, history) for history in histories]
    contexts = _views(model, tokenizer, pairs, template or default_template(model, tokenizer), _budgets(options))
    return _padded(model, tokenizer, [context.ids for context in contexts])


def _budgets(options: GenerationOptions | None) -> tuple[int | None, int]:
    """``(max_context_tokens, max_new_tokens)`` of the options; without options, no limit but the model's window."""
    return (options.max_context_tokens, options.max_new_tokens or 0) if options is not None else (None, 0)


def _cut(model, tokenizer, pairs: list, template: PromptTemplate, budgets: tuple[int | None, int]):
    """``(contexts, limit, room)``: each pair's prompt cut to ``limit`` tokens, the smaller of the caller's
    ``max_context_tokens`` and the ``room`` the model's window leaves beside ``max_new_tokens``."""
    max_context_tokens, max_new_tokens = budgets
    encoder = model.config.is_encoder_decoder
    room = context_room(model, tokenizer, max_new_tokens)
    limit = min(max_context_tokens or room, room)
    return [template.view(tokenizer, d, h, max_tokens=limit, encoder=encoder) for d, h in pairs], limit, room


def _views(model, tokenizer, pairs: list, template: PromptTemplate, budgets: tuple[int | None, int]) -> list:
    """Each (document or None, history) pair as its prompt, cut to the budgets (a warning when the model's room cut)."""
    max_context_tokens = budgets[0]
    contexts, limit, room = _cut(model, tokenizer, pairs, template, budgets)
    conditioned = [context for (document, _), context in zip(pairs, contexts) if document is not None]
    cut = sum(1 for context in conditioned if context.truncated_tokens or context.truncated_chars)
    if cut and limit == room and max_context_tokens != room:  # the model's room cut them, not the caller's limit
        logger.warning(
            "%d of %d contexts cut to the %d tokens the model has room for (their end kept); "
            "set max_context_tokens to choose the cut",
            cut,
            len(conditioned),
            limit,
        )
    return contexts


def context_cuts(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    template: PromptTemplate | None = None,
    options: GenerationOptions | None = None,
) -> list[dict]:
    """What :func:`build_inputs` left out of each conditioned context, for a report per row: ``{}`` when nothing,
    else the document's length (``document_chars``), the characters cut before tokenising (``truncated_chars``),
    the tokens cut then (``truncated_tokens``) and the tokens kept (``context_tokens``). Unset, ``template`` is the
    options' (:meth:`GenerationOptions.template`), as decoding with them lays prompts out.

    Args:
        model (`PreTrainedModel`): the generator.
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer.
        documents (`Sequence[str]`): one document per context.
        histories (`Sequence`): one history per context.
        template (`PromptTemplate`, *optional*): the prompt layout (unset: the options').
        options (`GenerationOptions`, *optional*): the budgets, as :func:`build_inputs` takes them.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import GenerationOptions
    >>> from faithkit.decoding.inputs import context_cuts
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> context_cuts(model, tokenizer, ["The Eiffel Tower is 330 metres tall. " * 20, "Short."],
    ...              [["How tall is it?"]] * 2, options=GenerationOptions(max_context_tokens=64))
    [{'document_chars': 740, 'truncated_chars': 228, 'truncated_tokens': 134, 'truncated_from': 'start', 'context_tokens': 63}, {}]
    ```
    """
    if template is None:
        template = options.template(model, tokenizer) if options is not None else default_template(model, tokenizer)
    contexts, _, _ = _cut(model, tokenizer, list(zip(documents, histories)), template, _budgets(options))
    return [
        {
            "document_chars": len(document),
            "truncated_chars": context.truncated_chars,
            "truncated_tokens": context.truncated_tokens,
            "truncated_from": "start",  # the prompt keeps the document's end, next to the dialogue
            "context_tokens": len(context.ids),
        }
        if context.truncated_chars or context.truncated_tokens
        else {}
        for document, context in zip(documents, contexts)
    ]


def _padded(model, tokenizer, rows: list[list[int]]) -> dict[str, torch.Tensor]:
    """The rows as one batch on the model's input device: left-padded for decoders, right-padded for encoders."""
    width = max(len(row) for row in rows)
    pad = pad_token_id(tokenizer)
    input_ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    attention_mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    if model.config.is_encoder_decoder:  # encoders read left to right: pad on the right
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        attention_mask = attention_mask.flip(-1)
    device = models.input_device(model)
    return {"input_ids": input_ids.to(device), "attention_mask": attention_mask.to(device)}


def context_room(model, tokenizer, max_new_tokens: int = 0) -> int:
    """Context tokens the model takes: its whole window for an encoder, else what the new tokens leave; a
    :class:`ConfigError` when they leave none.

    Args:
        model (`PreTrainedModel`): the generator.
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer (a sane ``model_max_length`` when the config has no
            position table).
        max_new_tokens (`int`, defaults to 0): the tokens the response may take.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding.inputs import context_room
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> context_room(model, tokenizer, max_new_tokens=40)  # SmolLM2's 8192 positions
    8152
    ```
    """
    window = models.context_window(model, tokenizer)
    room = window if model.config.is_encoder_decoder else window - max_new_tokens
    if room < 1:
        raise ConfigError(
            f"--max-new-tokens {max_new_tokens} leaves no room for a context in the model's {window} "
            "positions; ask for fewer new tokens"
        )
    return room


def decode_responses(
    model,
    tokenizer,
    outputs: torch.Tensor,
    inputs: dict,
    num_return_sequences: int = 1,
    template: PromptTemplate | None = None,
    views: int = 2,
) -> list:
    """The conditioned rows' generated text (prompt and special tokens removed), one per context.

    ``views``: as given to :func:`build_inputs` (2: only the first half of the rows are answers).
    With ``num_return_sequences > 1``, one list of texts per context. A response that starts
    with the ``template``'s own speaker prefix (``Agent:``, which models often repeat) loses it:
    the prefix belongs to the prompt, not to the response.

    Args:
        model (`PreTrainedModel`): the generator.
        tokenizer (`PreTrainedTokenizerBase`): its tokenizer.
        outputs (`torch.Tensor`): ``model.generate``'s output for ``inputs``.
        inputs (`dict`): :func:`build_inputs`' batch.
        num_return_sequences (`int`, defaults to 1): as given to ``model.generate``.
        template (`PromptTemplate`, *optional*): the prompt layout, whose speaker prefix a response loses.
        views (`int`, defaults to 2): as given to :func:`build_inputs`.

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import build_inputs, decode_responses
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> inputs = build_inputs(model, tokenizer, ["The Eiffel Tower is 330 metres tall."],
    ...                       [["How tall is the Eiffel Tower?"]], views=1)  # plain decoding: one view
    >>> outputs = model.generate(**inputs, num_beams=2, num_return_sequences=2, max_new_tokens=12)
    >>> decode_responses(model, tokenizer, outputs, inputs, num_return_sequences=2, views=1)
    [['The Eiffel Tower is 330 meters tall.', 'The Eiffel Tower is approximately 330 meters tall']]
    ```
    """
    contexts = inputs["input_ids"].shape[0] // views
    generated = outputs if model.config.is_encoder_decoder else outputs[:, inputs["input_ids"].shape[1] :]
    rows = generated[: contexts * num_return_sequences]
    texts = [response_text(text, template) for text in tokenizer.batch_decode(rows, skip_special_tokens=True)]
    if num_return_sequences == 1:
        return texts
    return [texts[i * num_return_sequences : (i + 1) * num_return_sequences] for i in range(contexts)]


SPEAKERS = ("User", "Agent", "Assistant", "System", "Document", "Human", "Bot", "Wizard", "Apprentice")
"""Speaker labels models write into a response when they go on with the prompt's layout (``User: …``,
``Document: …``), as the plain template and dialogue corpora write turns."""
OWN_SPEAKERS = ("Agent", "Assistant", "Bot", "Wizard")
"""The labels of the side that answers: a response that starts with one is that speaker's turn."""
_LABEL = r"(?:{names})[ \t]*:"


def _labels(names: Sequence[str]) -> str:
    return _LABEL.format(names="|".join(re.escape(name) for name in names))


_LEADING = re.compile(r"\s*((?i:" + _labels(SPEAKERS) + r")|[A-Z][a-z]{2,15}:(?=\s))")
_OWN = re.compile(r"(?:^|(?<=\s))" + _labels([*OWN_SPEAKERS, *(name.lower() for name in OWN_SPEAKERS)]))
_NEXT_TURN = re.compile(r"(?:^|(?<=\s))" + _labels([*SPEAKERS, *(name.upper() for name in SPEAKERS)]))


def response_text(text: str, template: PromptTemplate | None, echoes: Sequence[str] = ()) -> str:
    """A decoded continuation (in process, or from any engine) as the response it holds: the one place responses
    are cleaned. Stripped; without a copy of the prompt at its start; without the speaker labels it starts with (the
    ``template``'s ``Agent:``, ``Assistant:``; a turn that starts as another speaker's, ``User: …`` or any one
    capitalised word and a colon, ``Captain: …``, keeps what follows the answering side's label when it has one,
    else its text); and cut where a next speaker's turn begins (``… User: and then?``, ``Document: …``): the model
    went on writing the dialogue. The labels are :data:`SPEAKERS` and the template's own.

    Args:
        text (`str`): the decoded continuation.
        template (`PromptTemplate`, *optional*): the prompt layout; None removes no prefix of its own.
        echoes (`Sequence[str]`, *optional*): the prompt's text and last turn, dropped where the response repeats
            them at its start (with or without their speaker label).

    Examples:

    ```python
    >>> from faithkit.decoding.inputs import response_text
    >>> from faithkit.prompts import DEFAULT_TEMPLATE
    >>> response_text(" Agent: It is 330 metres tall.", DEFAULT_TEMPLATE)
    'It is 330 metres tall.'
    >>> response_text("User: In 1889. User: And its height?", DEFAULT_TEMPLATE)
    'In 1889.'
    ```
    """
    text = text.strip()
    prefix = template.response_prefix.strip() if template is not None else ""
    copies = {form for echo in echoes for form in (echo.strip(), _LEADING.sub("", echo, count=1).strip())}
    starts = sorted({form for form in copies if form} | ({prefix} if prefix else set()), key=len)
    while True:
        start = next((start for start in reversed(starts) if text.startswith(start)), None)
        if start is not None:
            text = text[len(start) :].strip()
            continue
        label = _LEADING.match(text)
        if label is None:
            break
        rest = text[label.end() :]
        own = _OWN.search(rest) if label.group(1).split(":")[0].strip().title() not in OWN_SPEAKERS else None
        text = (rest[own.end() :] if own else rest).strip()
    turn = _NEXT_TURN.search(text)
    if turn is not None:
        text = text[: turn.start()].strip()
    if prefix.endswith(":") and (cut := text.find(f" {prefix}")) >= 0:
        text = text[:cut].strip()
    return text


def last_turn(history) -> str:
    """The history's last turn (empty without one): the text a model most often repeats at a response's start.

    Args:
        history (`list[str]` or `str`): the dialogue history, oldest turn first (a string is one turn).

    Examples:

    ```python
    >>> from faithkit.decoding.inputs import last_turn
    >>> last_turn(["Hi.", "Do you know the Eiffel Tower?"]), last_turn([])
    ('Do you know the Eiffel Tower?', '')
    ```
    """
    from ..prompts import as_history

    turns = as_history(history)
    return turns[-1] if turns else ""


def length_order(documents: Sequence[str], histories: Sequence) -> list[int]:
    """Context indices, longest first: batches of similar length waste little on padding.

    :func:`generate_grid` batches contexts in this order, so a caller that makes batches the
    same way (the sweep, to resume batch by batch) gets the same batches and the same tokens.

    Args:
        documents (`Sequence[str]`): one document per context.
        histories (`Sequence`): one history per context.

    Examples:

    ```python
    >>> from faithkit.decoding import length_order
    >>> length_order(["Short.", "A much longer document."], [[], ["Hi"]])
    [1, 0]
    ```
    """
    return sorted(range(len(documents)), key=lambda i: -len(str(documents[i])) - len(str(histories[i])))
