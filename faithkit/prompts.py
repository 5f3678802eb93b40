"""The one place that turns (document, history) into model inputs.

PMI-FAITH and PMI-DECODE compare a *conditioned* view of a context (document + history)
with a *history-only* view. Both views must come from the same template or the PMI
measures template differences instead of the document's effect, so the metric, the
decoder and the benchmarks all build their inputs here.

A context is tokenised segment by segment (start tokens, document, turns, response
prefix) and the response separately, so the response's tokens are identical in every
view and an over-long document can be cut at the token level.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from collections.abc import Sequence

History = Sequence[str]


def as_history(history: str | Sequence[str] | None) -> list[str]:
    """Accept a single turn, a list of turns or None; return a list of turns."""
    if history is None:
        return []
    if isinstance(history, str):
        return [history] if history else []
    return [str(turn) for turn in history]


@dataclass
class Context:
    """Token ids of one view of a context, with what truncation removed: ``truncated_chars`` characters of the
    document (and history) before tokenising (:func:`within_budget`), then ``truncated_tokens`` tokens."""

    ids: list[int]
    truncated_tokens: int = 0
    truncated_chars: int = 0


CHARS_PER_TOKEN = 8
"""Characters of a text kept per token of room before it is tokenised: more than a token of text usually spans, so
the kept end still fills the room and the exact cut is then made on tokens; a longer text (a 50 MB document) is never
tokenised whole, which took minutes and gigabytes and held off Ctrl-C."""


def within_budget(tokenizer, text: str | None, max_tokens: int | None, keep: str = "end") -> tuple[str | None, int]:
    """``text``'s end (``keep="start"``: its start) within ``CHARS_PER_TOKEN * max_tokens`` characters (more, when
    those hold no more than ``max_tokens`` tokens, so no cut is made that tokens would not make), and how many
    characters were left out. The end is what a prompt keeps (the part next to the dialogue); the start is what
    a classifier's own truncation keeps (NLI models, which read a pair's first tokens)."""
    if keep not in ("end", "start"):
        raise ValueError(f"keep must be 'end' or 'start', got {keep!r}")
    if text is None or max_tokens is None:
        return text, 0
    budget = CHARS_PER_TOKEN * max(max_tokens, 1)
    while len(text) > budget:
        kept = text[-budget:] if keep == "end" else text[:budget]
        if len(_encode(tokenizer, kept)) > max_tokens:  # the kept part alone fills the room
            return kept, len(text) - budget
        budget *= 2
    return text, 0


@dataclass(frozen=True)
class PromptTemplate:
    """How a document, the dialogue history and the response are laid out.

    The defaults follow the PMI-FAITH authors' format: ``"Document: …\\n\\n"``, the history
    turns one per line, then ``"Agent:"`` and the response. Unlike the authors' code, no
    period is appended to turns or responses, and only the response's own tokens are
    scored (``"Agent:"`` belongs to the context).

    ``chat=True`` renders the context with the tokenizer's chat template instead: the
    system turn is ``system`` followed by ``system_document`` (the document), the history
    alternates user/assistant turns ending with a user turn. The history-only view keeps
    the system turn without ``system_document``, so the two views differ by the document
    alone (without a system turn of ours, templates such as SmolLM2's put in a default
    persona, and the PMI would measure that too).
    """

    document: str = "Document: {document}\n\n"
    turn: str = "{turn}\n"
    response_prefix: str = "Agent:"
    response: str = " {response}"
    chat: bool = False
    system: str = "Answer using only this document."
    system_document: str = "\n\nDocument: {document}"

    def __post_init__(self):
        for name, placeholder in (("document", "{document}"), ("turn", "{turn}"), ("response", "{response}")):
            if placeholder not in getattr(self, name):
                raise ValueError(f"PromptTemplate.{name} must contain {placeholder}, got {getattr(self, name)!r}")
        if self.chat and "{document}" not in self.system_document:
            raise ValueError(f"PromptTemplate.system_document must contain {{document}}, got {self.system_document!r}")

    # ---- text -------------------------------------------------------------------------
    def context_text(self, document: str | None, history: str | History | None) -> str:
        """The context as text (what a seq2seq encoder reads); ``document=None`` is the history-only view."""
        if self.chat:
            raise ValueError("context_text() renders plain templates; chat templates need a tokenizer (context())")
        text = self.document.format(document=document) if document is not None else ""
        text += "".join(self.turn.format(turn=turn) for turn in as_history(history))
        return text + self.response_prefix

    def response_text(self, response: str) -> str:
        return self.response.format(response=response) if not self.chat else response

    # ---- tokens -------------------------------------------------------------------------
    def context(
        self,
        tokenizer,
        document: str | None,
        history: str | History | None,
        max_tokens: int | None = None,
    ) -> Context:
        """Token ids of one view. Over ``max_tokens``, the document keeps its end, then the history its end."""
        document, cut_chars = within_budget(tokenizer, document, max_tokens)
        if self.chat:
            context = self._chat_context(tokenizer, document, history, max_tokens)
            context.truncated_chars = cut_chars
            return context
        start = start_ids(tokenizer)
        turns, cut_turns = within_budget(
            tokenizer, "".join(self.turn.format(turn=turn) for turn in as_history(history)), max_tokens
        )
        cut_chars += cut_turns
        prefix_ids = _encode(tokenizer, self.response_prefix)

        def build(document_text, turns_text) -> list[int]:
            document_ids = (
                [] if document_text is None else _encode(tokenizer, self.document.format(document=document_text))
            )
            return start + document_ids + _encode(tokenizer, turns_text) + prefix_ids

        ids = build(document, turns)
        full_length = len(ids)
        while max_tokens is not None and len(ids) > max_tokens:
            if document:  # cut the document body first, keeping its end and its "Document:" framing
                document = _drop_leading_tokens(tokenizer, document, len(ids) - max_tokens)
            elif turns:
                turns = _drop_leading_tokens(tokenizer, turns, len(ids) - max_tokens)
            else:
                raise ValueError(f"the context cannot fit in {max_tokens} tokens even without document and history")
            ids = build(document, turns)
        return Context(ids, truncated_tokens=full_length - len(ids), truncated_chars=cut_chars)

    def encoder_context(
        self,
        tokenizer,
        document: str | None,
        history: str | History | None,
        max_tokens: int | None = None,
    ) -> Context:
        """Encoder ids of :meth:`context_text` for seq2seq models (BART, T5), with the tokenizer's special tokens.

        Over ``max_tokens`` the text keeps its end (the history and the response prefix) and
        its leading special tokens.
        """
        document, cut_chars = within_budget(tokenizer, document, max_tokens)
        ids = list(tokenizer(self.context_text(document, history))["input_ids"])
        if max_tokens is None or len(ids) <= max_tokens:
            return Context(ids, truncated_chars=cut_chars)
        head = len(start_ids(tokenizer))
        return Context(
            ids[:head] + ids[len(ids) - (max_tokens - head) :],
            truncated_tokens=len(ids) - max_tokens,
            truncated_chars=cut_chars,
        )

    def view(
        self,
        tokenizer,
        document: str | None,
        history: str | History | None,
        max_tokens: int | None = None,
        encoder: bool = False,
    ) -> Context:
        """The model input of one view: :meth:`encoder_context` for seq2seq models, else :meth:`context`.

        Decoding, scoring and training all build their inputs here, so all three cut an
        over-long context the same way.
        """
        if encoder:
            return self.encoder_context(tokenizer, document, history, max_tokens)
        return self.context(tokenizer, document, history, max_tokens)

    def _chat_context(self, tokenizer, document, history, max_tokens) -> Context:
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("PromptTemplate(chat=True) needs a tokenizer with a chat template")
        messages = self.messages(document, history)
        ids = _chat_ids(tokenizer, messages)
        full_length = len(ids)
        while max_tokens is not None and len(ids) > max_tokens:
            if not document:
                raise ValueError(f"the chat context has {len(ids)} tokens, more than {max_tokens}, without a document")
            document = _drop_leading_tokens(tokenizer, document, len(ids) - max_tokens)
            messages[0]["content"] = self._system_turn(document)
            ids = _chat_ids(tokenizer, messages)
        return Context(ids, truncated_tokens=full_length - len(ids))

    def messages(self, document: str | None, history: str | History | None) -> list[dict[str, str]]:
        """The chat layout's messages: the system turn (with the document), then the history's turns, the last
        one the user's (an empty user turn without a history). What a chat API renders with its own template."""
        turns = as_history(history)
        messages = [{"role": "system", "content": self._system_turn(document)}]
        first_role = "user" if len(turns) % 2 == 1 else "assistant"
        roles = [first_role, "assistant" if first_role == "user" else "user"]
        messages += [{"role": roles[i % 2], "content": turn} for i, turn in enumerate(turns)]
        if not turns:
            messages.append({"role": "user", "content": ""})
        return messages

    def _system_turn(self, document: str | None) -> str:
        return self.system + (self.system_document.format(document=document) if document else "")

    def response_ids(self, tokenizer, response: str, max_tokens: int | None = None) -> list[int]:
        """The response's tokens; past ``CHARS_PER_TOKEN * max_tokens`` characters only its head is tokenised when
        that alone has more than ``max_tokens`` (the caller refuses it then: it cannot fit)."""
        text = self.response_text(response)
        if max_tokens is not None and len(text) > CHARS_PER_TOKEN * max_tokens:
            head = _encode(tokenizer, text[: CHARS_PER_TOKEN * max_tokens])
            if len(head) > max_tokens:
                return head
        return _encode(tokenizer, text)


def _drop_leading_tokens(tokenizer, text: str, count: int) -> str:
    """The text after its first ``count`` tokens, cut on a token boundary so it re-tokenises cleanly."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return "" if count >= len(offsets) else text[offsets[count][0] :].lstrip()


def _chat_ids(tokenizer, messages) -> list[int]:
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False))


def _encode(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def start_ids(tokenizer) -> list[int]:
    """The special tokens the tokenizer itself puts before a text (Gemma's ``<bos>``; none for GPT-2).

    Models are scored the way they were trained: a model whose tokenizer adds ``<bos>``
    sees it first in every sequence, whatever template is used.
    """
    probe = "x"
    with_special = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    for offset in range(len(with_special) - len(plain) + 1):
        if with_special[offset : offset + len(plain)] == plain:
            return with_special[:offset]
    warnings.warn("could not locate the text among the tokenizer's special tokens; adding none", stacklevel=2)
    return []


DEFAULT_TEMPLATE = PromptTemplate()
CHAT_TEMPLATE = PromptTemplate(chat=True)
__all__ = [
    "PromptTemplate",
    "Context",
    "DEFAULT_TEMPLATE",
    "CHAT_TEMPLATE",
    "CHARS_PER_TOKEN",
    "as_history",
    "start_ids",
    "within_budget",
]
