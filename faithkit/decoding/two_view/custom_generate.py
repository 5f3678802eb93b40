"""PMI-DECODE as transformers' ``custom_generate``: a decoding loop to pass as a callable, and a folder to share.

transformers' ``generate(custom_generate=...)`` (since 4.56) takes either

* a callable: generate prepares the inputs, the processors and the stopping criteria as usual and hands them
  to it in place of its own decoding loop. :func:`pmi_decoding` is that loop for inputs that are two views of
  each context (:func:`~faithkit.decoding.build_inputs`): greedy, beam search or sampling, with
  :class:`~faithkit.decoding.PMIDecode` put among the processors where ``logits_processor=[PMIDecode(...)]``
  would be, so both give the same tokens;
* a folder (a hub repository or a local path) holding ``custom_generate/generate.py``, which replaces generate
  whole. :data:`PMI_DECODE_FOLDER`, shipped in this package, is such a folder, ready to upload as it is; its
  ``generate`` is :func:`pmi_generate`, which builds the two views from ``documents`` and ``histories`` and
  decodes with :func:`pmi_decoding`:

```python
model.generate(custom_generate=str(PMI_DECODE_FOLDER), trust_remote_code=True, tokenizer=tokenizer,
               documents=documents, histories=histories, alpha=0.25, top_p=0.6, max_new_tokens=40)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from transformers import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from ...prompts import PromptTemplate
from .parameters import PMIParameters
from .pmi_decode import PMIDecode

PMI_DECODE_FOLDER = Path(__file__).resolve().parents[2] / "hub" / "pmi_decode"
"""The folder ``generate(custom_generate=str(PMI_DECODE_FOLDER), trust_remote_code=True, ...)`` loads."""

_WARPERS = (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)
"""Where generate's sampling warpers begin in its prepared processors: a user's processors go before them."""


def pmi_decoding(
    model,
    input_ids,
    logits_processor: LogitsProcessorList,
    stopping_criteria,
    generation_config,
    synced_gpus: bool = False,
    streamer=None,
    alpha: float = PMIParameters.alpha,
    top_p: float = PMIParameters.top_p,
    **model_kwargs,
):
    """generate's decoding loop with PMI-DECODE: ``model.generate(**build_inputs(...), custom_generate=pmi_decoding,
    alpha=0.25, top_p=0.6)``. Returns what generate returns: both halves' rows, the conditioned ones first.

    Sampling follows generate's ``do_sample``, ``temperature`` and ``top_k``, applied to the PMI-DECODE scores as
    ``PMIDecode(do_sample=True, temperature=..., top_k=...)`` applies them (``top_p`` is PMI-DECODE's own).

    Wide signature: transformers' ``custom_generate`` calls a decoding loop with these keywords, and hands it only
    the keywords its signature names, so PMI-DECODE's two cannot ride in ``model_kwargs``.

    Args:
        model (`PreTrainedModel`): the generator (generate passes it).
        input_ids (`torch.LongTensor`): the two views of each context, as :func:`~faithkit.decoding.build_inputs`
            lays them out.
        logits_processor (`LogitsProcessorList`): generate's prepared processors; PMI-DECODE goes before its
            sampling warpers.
        stopping_criteria (`StoppingCriteriaList`): generate's.
        generation_config (`GenerationConfig`): generate's (its ``num_beams`` and ``do_sample`` choose the loop).
        synced_gpus (`bool`, defaults to False): generate's.
        streamer (`BaseStreamer`, *optional*): generate's (greedy and sampling only).
        alpha (`float`, defaults to 0.25): weight of the PMI term, in [0, 1].
        top_p (`float`, defaults to 0.6): nucleus of P(y | d, h), in (0, 1].
        **model_kwargs (`Any`): the rest of generate's inputs (the attention mask, the cache).

    Examples:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding import build_inputs, decode_responses
    >>> from faithkit.decoding.two_view.custom_generate import pmi_decoding
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> inputs = build_inputs(model, tokenizer, ["The Eiffel Tower is 330 metres tall."],
    ...                       [["How tall is the Eiffel Tower?"]])
    >>> outputs = model.generate(**inputs, custom_generate=pmi_decoding, alpha=0.25, top_p=0.6, max_new_tokens=12)
    >>> decode_responses(model, tokenizer, outputs, inputs)  # the tokens of logits_processor=[PMIDecode(0.25, 0.6)]
    ['The Eiffel Tower is 330 metres tall.']
    ```
    """
    sampled = bool(generation_config.do_sample)
    processor = PMIDecode(
        alpha,
        top_p,
        do_sample=sampled,
        **({"temperature": generation_config.temperature or 1.0, "top_k": generation_config.top_k} if sampled else {}),
    )
    processors = list(logits_processor)
    first_warper = next((i for i, p in enumerate(processors) if isinstance(p, _WARPERS)), len(processors))
    processors.insert(first_warper, processor)
    loop = type(model)._beam_search if generation_config.num_beams > 1 else type(model)._sample
    extra = {"streamer": streamer} if generation_config.num_beams == 1 and streamer is not None else {}
    return loop(
        model,
        input_ids,
        logits_processor=LogitsProcessorList(processors),
        stopping_criteria=stopping_criteria,
        generation_config=generation_config,
        synced_gpus=synced_gpus,
        **extra,
        **model_kwargs,
    )


def pmi_generate(
    model,
    documents: Sequence[str] | None = None,
    histories: Sequence | None = None,
    tokenizer=None,
    template: PromptTemplate | None = None,
    **generate_arguments,
):
    """The folder's ``generate``: the two views of each (document, history) context, decoded with PMI-DECODE.

    ``generate_arguments`` are the rest of what generate was given: PMI-DECODE's ``alpha`` and ``top_p``,
    ``max_context_tokens`` (cut longer contexts, keeping their end), and generate's own (``max_new_tokens``,
    ``num_beams``, ``do_sample``, ...). Returns the conditioned rows only: ``B x num_return_sequences`` sequences (or generate's
    output object holding them, with ``return_dict_in_generate``), prompt included, as generate returns them.

    Args:
        model (`PreTrainedModel`): the generator.
        documents (`Sequence[str]`): one grounding document per context (required).
        histories (`Sequence`): one dialogue history per context (required).
        tokenizer (`PreTrainedTokenizerBase`): the model's tokenizer (required).
        template (`PromptTemplate`, *optional*): the prompt layout (default: the chat template of an instruct model).
        **generate_arguments (`Any`): ``alpha``, ``top_p``, ``max_context_tokens`` and generate's own.

    Examples:

    The folder loaded as transformers loads a hub repository's ``custom_generate``:

    ```python
    >>> from faithkit.serving import models
    >>> from faithkit.decoding.two_view.custom_generate import PMI_DECODE_FOLDER
    >>> model, tokenizer = models.load("smollm2-135m")
    >>> outputs = model.generate(custom_generate=str(PMI_DECODE_FOLDER), trust_remote_code=True, tokenizer=tokenizer,
    ...                          documents=["The Eiffel Tower is 330 metres tall."],
    ...                          histories=[["How tall is the Eiffel Tower?"]], max_new_tokens=12)
    >>> tokenizer.decode(outputs[0], skip_special_tokens=True).splitlines()[-1]  # the prompt, then the response
    'The Eiffel Tower is 330 metres tall.'
    ```
    """
    from ..generation_options import GenerationOptions
    from ..inputs import build_inputs

    if documents is None or histories is None or tokenizer is None:
        raise ValueError(
            "PMI-DECODE's custom_generate needs documents=, histories= and tokenizer= "
            "(one document and one history, a list of turns, per context)"
        )
    given = {key: value for key, value in generate_arguments.items() if value is not None}
    parameters = {key: given.pop(key) for key in ("alpha", "top_p") if key in given}
    budgets = GenerationOptions(  # room for the new tokens generate will make (its config's when not given)
        max_context_tokens=given.pop("max_context_tokens", None),
        max_new_tokens=given.get("max_new_tokens") or model.generation_config.max_new_tokens or 1,
    )
    inputs = build_inputs(model, tokenizer, documents, histories, template, budgets)
    outputs = model.generate(**inputs, **given, **parameters, custom_generate=pmi_decoding)
    returned = max(given.get("num_return_sequences") or 1, 1)
    keep = len(documents) * returned
    if hasattr(outputs, "sequences"):
        outputs.sequences = outputs.sequences[:keep]
        return outputs
    return outputs[:keep]
