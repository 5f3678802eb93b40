"""Rerank candidates drawn by a serving engine: ``faithkit candidates``' row computation.

Each row's prompt is the one faithkit decodes from (:class:`~faithkit.prompts.PromptTemplate`
with the model's tokenizer and chat template, cut to fit as :func:`~faithkit.decoding.build_inputs`
cuts it), sent as token ids (or their text, or as chat messages). A row asks for its greedy
response (temperature 0) and ``n`` samples, each sample its own request with its own seed
(from the run's seed, the row id and the candidate's number): every server takes a seed, not
every one takes ``n``, and so a row's candidates do not depend on the chunk it lands in, and a
resumed run asks again only for rows not yet written. Requests run ``concurrency`` at a time (:meth:`faithkit.serving.engine.Engine.map`).
The records are the candidates file ``faithkit rerank`` reads.
"""

from __future__ import annotations

from ..data import Row
from ..decoding.inputs import last_turn, response_text
from ..decoding.generation_options import row_seed
from ..decoding.rerank import candidate_seeds
from ..serving.engine import Engine, EngineSampling
from ..errors import ConfigError
from ..prompts import CHAT_TEMPLATE, DEFAULT_TEMPLATE, PromptTemplate

SEED_RANGE = 2**31
"""Request seeds stay below this: llama.cpp takes a 32-bit seed, and OpenAI's API a signed integer."""


def engine_template(tokenizer, chat: bool | None) -> PromptTemplate:
    """The layout faithkit decodes a causal LM with: ``chat`` when set, else the chat template when the tokenizer has one."""
    if chat is None:
        chat = bool(getattr(tokenizer, "chat_template", None))
    return CHAT_TEMPLATE if chat else DEFAULT_TEMPLATE


def request_seeds(seed: int, row_id, n: int) -> list[int]:
    """The seeds of a row's ``n`` sampled candidates (candidate k's depends on the run's seed, the row id and k)."""
    return [value % SEED_RANGE for value in candidate_seeds(row_seed(seed, row_id), n)]


def prompt_echoes(row: Row, prompt) -> tuple[str, ...]:
    """What an engine may repeat of ``row``'s prompt at a response's start: the prompt's text (a text prompt), and
    the history's last turn."""
    return tuple(text for text in (prompt if isinstance(prompt, str) else "", last_turn(row.history)) if text)


class EngineCandidatesJob:
    """Turns a chunk of rows into ``{"greedy", "responses"}`` records from the engine."""

    def __init__(
        self,
        engine: Engine,
        tokenizer,
        template: PromptTemplate,
        sampling: EngineSampling,
        max_new_tokens: int,
        max_context_tokens: int,
        extra_body: dict | None = None,
    ):
        if sampling.endpoint == "chat" and not template.chat:
            raise ConfigError(
                "--endpoint chat sends the chat layout's messages; drop --no-chat, or use --endpoint completions"
            )
        self.engine, self.tokenizer, self.template, self.sampling = engine, tokenizer, template, sampling
        self.max_new_tokens, self.max_context_tokens = max_new_tokens, max_context_tokens
        self.extra_body = extra_body

    def prompt(self, row: Row):
        """What the engine gets for ``row``: token ids, their text, or the chat messages."""
        if self.sampling.endpoint == "chat":
            return self.template.messages(row.document, row.history)
        ids = self.template.context(self.tokenizer, row.document, row.history, max_tokens=self.max_context_tokens).ids
        return ids if self.sampling.prompt == "tokens" else self.tokenizer.decode(ids)

    def ask(self, prompt, temperature: float, seed: int, echoes: tuple[str, ...] = ()) -> str:
        """One response's text, as faithkit cleans a decoded one (``echoes``: the prompt's text and last turn, dropped
        where the engine repeats them at the response's start)."""
        top_p = self.sampling.top_p if temperature > 0 else 1.0
        text = self.engine.ask(
            prompt,
            max_tokens=self.max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            extra_body=self.extra_body,
        )
        return response_text(text, self.template, echoes)

    def __call__(self, rows: list[Row]) -> list[dict]:
        prompts = [self.prompt(row) for row in rows]  # a row that cannot fit fails here, before any request
        n = self.sampling.n
        requests = []
        for row, prompt in zip(rows, prompts):
            seeds = request_seeds(self.sampling.seed, row.id, n)
            echoes = prompt_echoes(row, prompt)
            requests.append((prompt, 0.0, seeds[0], echoes))  # greedy: the seed is unused
            requests += [(prompt, self.sampling.temperature, seed, echoes) for seed in seeds]
        texts = self.engine.map(lambda request: self.ask(*request), requests)
        step = n + 1
        return [
            {"greedy": texts[i * step], "responses": texts[i * step + 1 : (i + 1) * step]} for i in range(len(rows))
        ]
