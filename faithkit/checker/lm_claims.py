"""The ``lm_claim`` kind: an LM's replies to a history shown without its document, kept where they name a fact
the document does not: added claims of the kind a dialogue model hallucinates."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .contexts import Context
from .edits import novel_facts
from .examples import Example


def lm_claims(
    contexts: Sequence[Context], count: int, generate, nlp, example_of: Callable[[Context, str, str], Example]
) -> list[Example]:
    """Replies of an LM that was shown the history only, kept where they name an entity or number that the
    context's document does not: added claims of the kind a model hallucinates. ``generate`` maps a list of
    histories to replies; it is asked in rounds of twice what is still missing. ``example_of(context, reply,
    detail)`` makes the example (the recipe's :meth:`~faithkit.checker.synthetic.Builder.lm_claim`)."""
    examples: list[Example] = []
    position = 0
    while len(examples) < count and position < len(contexts):
        batch = contexts[position : position + 2 * (count - len(examples))]
        position += len(batch)
        for context, reply in zip(batch, generate([c.history for c in batch])):
            reply = reply.strip()
            novel = novel_facts(nlp(reply), "\n".join(context.sections)) if reply else []
            if novel and len(reply.split()) >= 4 and len(examples) < count:
                examples.append(example_of(context, reply, "names " + ", ".join(novel[:3])))
    return examples


def history_only_replies(model_name: str, seed: int, max_new_tokens: int = 40, batch_size: int = 16):
    """A function from histories to the LM's replies without any document (chat template, left-padded batches,
    sampling at temperature 0.9 and top-p 0.9 seeded with ``seed`` + the batch's number, so a run is reproducible)."""
    import torch

    from ..serving import models

    model, tokenizer = models.load(model_name)
    tokenizer.padding_side = "left"
    batches = iter(range(seed, seed + 10**9))

    def messages(history: list[str]) -> list[dict]:
        turns = history[-2:]
        return [{"role": "user" if (len(turns) - i) % 2 else "assistant", "content": t} for i, t in enumerate(turns)]

    def replies(histories: Sequence[list[str]]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(histories), batch_size):
            prompts = [
                tokenizer.apply_chat_template(messages(h), add_generation_prompt=True, tokenize=False)
                for h in histories[start : start + batch_size]
            ]
            encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            torch.manual_seed(next(batches))
            with torch.no_grad():
                output = model.generate(
                    **encoded,
                    do_sample=True,
                    temperature=0.9,
                    top_p=0.9,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                )
            out += tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
        return out

    return replies
