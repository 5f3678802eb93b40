"""Build the paired inputs PMIDecode needs, run generate, and get the responses back as text.

The conditioned and history-only views come from :class:`faithkit.prompts.PromptTemplate`,
the same views PMI-FAITH scores, so decoding and measuring agree on what "the document's
effect" is.
"""

from __future__ import annotations

import copy
import inspect
import logging
from typing import Iterator, Sequence

import torch

from .. import models
from ..errors import ConfigError
from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE, PromptTemplate
from .pmi_decode import PMIDecode

logger = logging.getLogger(__name__)

# generate's sampling warpers other than temperature/top_k; PMIDecode's one-hot would make them silent no-ops
_UNSUPPORTED_WARPERS = ("min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "top_h")


def default_template(model, tokenizer) -> PromptTemplate:
    """The tokenizer's chat template for decoder-only models that have one (instruct models), else the plain one."""
    if not model.config.is_encoder_decoder and getattr(tokenizer, "chat_template", None):
        return CHAT_TEMPLATE
    return DEFAULT_TEMPLATE


def pad_token_id(tokenizer) -> int:
    """The tokenizer's pad token, or its end-of-sequence token when it has none (GPT-2, many base LMs)."""
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
    max_context_tokens: int | None = None,
    max_new_tokens: int = 0,
) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask`` with 2B rows: the B conditioned views, then the B history-only views.

    Decoder-only rows are left-padded so every row ends where generation starts; seq2seq rows
    are the encoder inputs (the decoder starts identically for both halves). Over-long
    contexts keep their end: at most ``max_context_tokens``, and never more than the model's
    context window leaves beside ``max_new_tokens`` (a warning counts the contexts that limit cut).
    """
    if len(documents) != len(histories):
        raise ValueError(f"documents and histories must have the same length, got {len(documents)} and {len(histories)}")
    if not len(documents):
        raise ValueError("no contexts given: documents and histories are empty")
    models.check_head(model)
    template = template or default_template(model, tokenizer)
    views = [(document, history) for document, history in zip(documents, histories)]
    views += [(None, history) for _, history in zip(documents, histories)]
    encoder = model.config.is_encoder_decoder
    room = context_room(model, tokenizer, max_new_tokens)
    limit = min(max_context_tokens or room, room)
    contexts = [template.view(tokenizer, d, h, max_tokens=limit, encoder=encoder) for d, h in views]
    cut = sum(1 for context in contexts[:len(documents)] if context.truncated_tokens)
    if cut and limit == room and max_context_tokens != room:  # the model's room cut them, not the caller's limit
        logger.warning("%d of %d contexts cut to the %d tokens the model has room for (their end kept); "
                       "set max_context_tokens to choose the cut", cut, len(documents), limit)
    rows = [context.ids for context in contexts]
    width = max(len(row) for row in rows)
    pad = pad_token_id(tokenizer)
    input_ids = torch.tensor([[pad] * (width - len(row)) + row for row in rows])
    attention_mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in rows])
    if model.config.is_encoder_decoder:  # encoders read left to right: pad on the right
        input_ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        attention_mask = attention_mask.flip(-1)
    return {"input_ids": input_ids.to(model.device), "attention_mask": attention_mask.to(model.device)}


def context_room(model, tokenizer, max_new_tokens: int = 0) -> int:
    """Context tokens the model takes: its whole window for an encoder, else what the new tokens leave."""
    window = models.context_window(model, tokenizer)
    room = window if model.config.is_encoder_decoder else window - max_new_tokens
    if room < 1:
        raise ConfigError(f"--max-new-tokens {max_new_tokens} leaves no room for a context in the model's {window} "
                          "positions; ask for fewer new tokens")
    return room


def decode_responses(model, tokenizer, outputs: torch.Tensor, inputs: dict, num_return_sequences: int = 1,
                     template: PromptTemplate | None = None) -> list:
    """The conditioned rows' generated text (prompt and special tokens removed), one per context.

    With ``num_return_sequences > 1``, one list of texts per context. A response that starts
    with the ``template``'s own speaker prefix (``Agent:``, which models often repeat) loses it:
    the prefix belongs to the prompt, not to the response.
    """
    contexts = inputs["input_ids"].shape[0] // 2
    generated = outputs if model.config.is_encoder_decoder else outputs[:, inputs["input_ids"].shape[1]:]
    rows = generated[: contexts * num_return_sequences]
    texts = [_without_prefix(text.strip(), template) for text in tokenizer.batch_decode(rows, skip_special_tokens=True)]
    if num_return_sequences == 1:
        return texts
    return [texts[i * num_return_sequences:(i + 1) * num_return_sequences] for i in range(contexts)]


def _without_prefix(text: str, template: PromptTemplate | None) -> str:
    prefix = template.response_prefix.strip() if template is not None else ""
    return text[len(prefix):].strip() if prefix and text.startswith(prefix) else text


@torch.no_grad()
def prompt_cache(model, inputs: dict, copies: int = 1, groups: int = 2):
    """The KV cache of every prompt but its last token, for ``generate(..., cache=...)``; None when not applicable.

    generate prefills each row at the batch's width, and for beam search (or several samples)
    once per copy. The history-only views are shorter than the conditioned ones, so prefilling
    the ``groups`` consecutive blocks of rows (the two halves) at their own widths and copying
    the result ``copies`` times (``max(num_beams, num_return_sequences)``) does the same work
    once and without padding. Only decoder-only models whose cache is made of plain
    ``DynamicLayer`` layers qualify (sliding-window or static caches cannot be re-padded).
    """
    from transformers.cache_utils import DynamicLayer

    layer_types = getattr(model.config.get_text_config(), "layer_types", None) or ["full_attention"]
    if (model.config.is_encoder_decoder or set(layer_types) != {"full_attention"}
            or "position_ids" not in inspect.signature(model.forward).parameters):
        return None
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    width = ids.shape[1] - 1
    if width < 1 or ids.shape[0] % groups:
        return None
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    caches = []
    for block_ids, block_mask in zip(ids[:, :-1].chunk(groups), mask[:, :-1].chunk(groups)):
        if not block_mask.any():  # one-token prompts: nothing to prefill
            return None
        start = int((block_mask.sum(0) > 0).nonzero()[0])
        block_ids, block_mask = block_ids[:, start:], block_mask[:, start:]
        positions = (block_mask.long().cumsum(-1) - 1).masked_fill(block_mask == 0, 0)
        output = model(input_ids=block_ids, attention_mask=block_mask, position_ids=positions, use_cache=True, **keep)
        cache = getattr(output, "cache", None)
        if cache is None or any(type(layer) is not DynamicLayer for layer in cache.layers):
            return None
        caches.append(cache)
    merged = caches[0]
    for index, layer in enumerate(merged.layers):  # left-pad with zeros: the attention mask hides those columns
        layer.keys = torch.cat([_pad_left(c.layers[index].keys, width) for c in caches])
        layer.values = torch.cat([_pad_left(c.layers[index].values, width) for c in caches])
    if copies > 1:
        merged.batch_repeat_interleave(copies)
    return merged


def _pad_left(states: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(states, (0, 0, width - states.shape[-2], 0))


def pmi_processor(model, alpha: float, top_p: float, generate_kwargs: dict, generators=None) -> PMIDecode:
    """The PMIDecode for these generate kwargs; moves temperature/top_k into it when sampling (see PMIDecode)."""
    if not generate_kwargs.get("do_sample", False):
        return PMIDecode(alpha=alpha, top_p=top_p)
    if generate_kwargs.get("num_beams", 1) > 1:
        raise ValueError(
            "PMI-DECODE cannot keep the history-only rows synchronised under beam sampling "
            "(do_sample=True with num_beams>1); use num_beams=1 to sample, or do_sample=False for beam search"
        )
    unsupported = [name for name in _UNSUPPORTED_WARPERS if generate_kwargs.get(name) is not None]
    if unsupported:
        raise ValueError(
            f"PMI-DECODE sampling supports temperature and top_k; {', '.join(unsupported)} would be ignored. "
            "Drop them (the top_p argument is PMI-DECODE's own nucleus)"
        )
    config = model.generation_config
    temperature = generate_kwargs.get("temperature") or config.temperature or 1.0
    top_k = generate_kwargs.get("top_k", config.top_k) or None
    return PMIDecode(alpha=alpha, top_p=top_p, do_sample=True, temperature=temperature, top_k=top_k,
                     generators=generators)


def length_order(documents: Sequence[str], histories: Sequence) -> list[int]:
    """Context indices, longest first: batches of similar length waste little on padding.

    :func:`generate_grid` batches contexts in this order, so a caller that makes batches the
    same way (the sweep, to resume batch by batch) gets the same batches and the same tokens.
    """
    return sorted(range(len(documents)), key=lambda i: -len(str(documents[i])) - len(str(histories[i])))


def generate(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    alpha: float = 0.25,
    top_p: float = 0.6,
    template: PromptTemplate | None = None,
    batch_size: int = 8,
    max_context_tokens: int | None = None,
    seeds: Sequence[int] | None = None,
    **generate_kwargs,
) -> list:
    """PMI-DECODE responses for (document, history) contexts: one string each, or a list with ``num_return_sequences>1``.

    ``generate_kwargs`` go to ``model.generate`` (``max_new_tokens``, ``num_beams``,
    ``do_sample``, ``temperature``, ``top_k``, extra ``logits_processor`` …). Contexts are
    batched by length, ``batch_size`` contexts (2 × ``batch_size`` rows) at a time, and their
    prompts prefilled once without padding (:func:`prompt_cache`). When sampling, ``seeds``
    (one per context, e.g. :func:`faithkit.decoding.settings.row_seed` of the row ids) give
    every context its own generator, so its response does not depend on the batch it is in;
    without them, draws come from torch's global RNG.
    """
    return generate_grid(model, tokenizer, documents, histories, [(alpha, top_p)], template=template,
                         batch_size=batch_size, max_context_tokens=max_context_tokens, seeds=seeds,
                         **generate_kwargs)[0]


def generate_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence[tuple[float, float]],
    **options,
) -> list[list]:
    """PMI-DECODE responses for every ``(alpha, top_p)`` cell: ``responses[cell][context]``.

    Each cell's responses equal :func:`generate` with that cell's alpha and top_p, token for
    token, but a context's prompt work is paid once per batch rather than once per cell (see
    :func:`iter_grid`, which yields them as they finish). ``options`` as in :func:`generate`.
    """
    results: list[list] = [[None] * len(documents) for _ in cells]
    for cell, indices, responses in iter_grid(model, tokenizer, documents, histories, cells, **options):
        for i, response in zip(indices, responses):
            results[cell][i] = response
    return results


@torch.no_grad()
def iter_grid(
    model,
    tokenizer,
    documents: Sequence[str],
    histories: Sequence,
    cells: Sequence[tuple[float, float]],
    template: PromptTemplate | None = None,
    batch_size: int = 8,
    max_context_tokens: int | None = None,
    seeds: Sequence[int] | None = None,
    **generate_kwargs,
) -> Iterator[tuple[int, list[int], list]]:
    """Yield ``(cell index, context indices, responses)`` as each cell finishes each batch of contexts.

    Batches are made as :func:`generate` makes them (:func:`length_order`, ``batch_size``
    contexts), and each batch's prompts are prepared once for all cells: decoder-only models
    prefill them once (:func:`prompt_cache`) and every cell decodes from its own copy of that
    cache (generate extends the cache it is given); encoder-decoder models run the encoder
    once and every cell reads its output. Other arguments as in :func:`generate`.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if len(documents) != len(histories):
        raise ValueError(f"documents and histories must have the same length, got {len(documents)} and {len(histories)}")
    if seeds is not None and not generate_kwargs.get("do_sample", False):
        raise ValueError("seeds apply to sampling only; pass do_sample=True as well, or no seeds")
    if seeds is not None and len(seeds) != len(documents):
        raise ValueError(f"seeds need one per context, got {len(seeds)} for {len(documents)} contexts")
    for alpha, top_p in cells:  # bad settings fail before any batch runs
        pmi_processor(model, alpha, top_p, generate_kwargs)
    extra = list(generate_kwargs.pop("logits_processor", None) or [])
    num_return_sequences = generate_kwargs.get("num_return_sequences", 1)
    copies = max(generate_kwargs.get("num_beams", 1), num_return_sequences)
    template = template or default_template(model, tokenizer)
    generate_kwargs = {"pad_token_id": pad_token_id(tokenizer), **generate_kwargs}
    max_new_tokens = generate_kwargs.get("max_new_tokens") or model.generation_config.max_new_tokens or 0
    context_room(model, tokenizer, max_new_tokens)  # too many new tokens fail before any batch runs
    order = length_order(documents, histories)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        inputs = build_inputs(model, tokenizer, [documents[i] for i in chunk], [histories[i] for i in chunk],
                              template, max_context_tokens, max_new_tokens)
        shared = {} if "cache" in generate_kwargs else _shared_prefill(model, inputs, copies)
        for cell, (alpha, top_p) in enumerate(cells):
            generators = None
            if seeds is not None:  # copies of a context draw in turn from its generator
                generators = [torch.Generator(model.device).manual_seed(int(seeds[i])) for i in chunk]
                generators = [g for g in generators for _ in range(num_return_sequences)]
            processor = pmi_processor(model, alpha, top_p, generate_kwargs, generators)
            outputs = model.generate(**inputs, logits_processor=extra + [processor], **_copy(shared),
                                     **generate_kwargs)
            yield cell, chunk, decode_responses(model, tokenizer, outputs, inputs, num_return_sequences, template)


def _shared_prefill(model, inputs: dict, copies: int) -> dict:
    """The generate kwargs that carry a batch's prompt work: the encoder's output, or the prefilled cache."""
    if model.config.is_encoder_decoder:
        encoder = model.get_encoder()
        return {"encoder_outputs": encoder(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                           return_dict=True)}
    cache = prompt_cache(model, inputs, copies=copies)
    return {} if cache is None else {"cache": cache}


def _copy(shared: dict) -> dict:
    """A per-cell copy: generate extends the cache in place and re-binds the encoder output's tensors."""
    if "cache" in shared:
        return {"cache": copy.deepcopy(shared["cache"])}
    if "encoder_outputs" in shared:
        outputs = shared["encoder_outputs"]
        return {"encoder_outputs": type(outputs)(**outputs)}
    return {}
