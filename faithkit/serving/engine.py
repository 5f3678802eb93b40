"""A serving engine (vLLM, SGLang, llama.cpp's server, TGI) asked for completions over its OpenAI-compatible API.

faithkit talks to it through the ``openai`` client, which retries what a busy or restarting
server answers (429, 5xx, timeouts, refused connections) with exponential backoff. What is
left after the retries is one :class:`~faithkit.errors.ServerError` saying what is wrong and
the fix: the server is down, the model is not the one it serves, the key is refused, the
reply is not OpenAI's. The API key is given to the client only; no message, log line or
output names it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ServerError
from ..settings.options import option

ENDPOINTS = ("completions", "chat")
"""``completions``: ``/v1/completions`` with the prompt faithkit builds (token ids or text); ``chat``:
``/v1/chat/completions`` with the prompt's messages, rendered by the server's own chat template."""

PROMPT_FORMS = ("tokens", "text")
"""How ``/v1/completions`` gets the prompt: faithkit's token ids (exact: what faithkit decodes from), or their text."""


@dataclass(frozen=True)
class EngineOptions:
    """How to reach the server: what a rerun may change without changing any candidate."""

    concurrency: int = option(4, "requests in flight at once", low=1)
    timeout: float = option(120.0, "seconds a request may take before it is retried", low=0, low_open=True)
    retries: int = option(3, "retries of a request the server failed (429, 5xx, timeout, refused connection)", low=0)


@dataclass(frozen=True)
class EngineSampling:
    """What the candidates depend on besides the rows and the model: part of the output's fingerprint."""

    n: int = option(8, "sampled candidates per row besides the greedy response", low=1)
    temperature: float = option(1.0, "sampling temperature of the candidates", low=0, low_open=True)
    top_p: float = option(
        1.0, "nucleus of the candidates' sampling", low=0, high=1, low_open=True, meaning="1 keeps every token"
    )
    seed: int = option(0, "seed of the run; candidate k of a row is asked with a seed from it, the row id and k")
    endpoint: str = option("completions", "the API to ask", choices=ENDPOINTS)
    prompt: str = option(
        "tokens", "the prompt /v1/completions gets: faithkit's token ids, or their text", choices=PROMPT_FORMS
    )


def extra_body(text: str) -> dict:
    """argparse type of ``--extra-body``: a JSON object of the engine's own request fields."""
    import argparse
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(
            f"not JSON ({error.msg}); give an object, e.g. '{{\"repeat_penalty\": 1}}'"
        ) from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("give a JSON object of request fields, e.g. '{\"repeat_penalty\": 1}'")
    return value


def api_key(given: str | None) -> str:
    """The key to send: ``given``, else ``$OPENAI_API_KEY``, else a placeholder (local servers need none)."""
    return given or os.environ.get("OPENAI_API_KEY") or "none"


@dataclass(frozen=True)
class Reply:
    """A response's text and, when asked for and served, its first token's likeliest alternatives: token ->
    log-probability."""

    text: str
    first_token: dict[str, float] | None = None


class Engine:
    """One server and one of its models; :meth:`ask` returns a response's text."""

    def __init__(self, url: str, model: str | None, key: str, options: EngineOptions):
        from openai import OpenAI

        self.url = url
        self.client = OpenAI(base_url=url, api_key=key, timeout=options.timeout, max_retries=options.retries)
        self.options = options
        self.model = self._served_model(model)

    def _served_model(self, asked: str | None) -> str:
        """``asked`` when the server serves it; without one, the server's only model. Else a ServerError."""
        with self._answer("listing its models (GET /models)"):
            served = [entry.id for entry in self.client.models.list().data]
        if not all(isinstance(name, str) for name in served):
            raise ServerError(
                f"{self.url}: its /models reply is not OpenAI's (no model ids); is it an OpenAI-compatible server?"
            )
        if asked is None:
            if len(served) != 1:
                raise ServerError(
                    f"{self.url} serves {len(served)} models ({', '.join(served) or 'none'}); name one with --served-model"
                )
            return served[0]
        if asked not in served:
            raise ServerError(
                f"{self.url} does not serve the model '{asked}'; it serves {', '.join(served) or 'none'}: "
                "give one of them with --served-model"
            )
        return asked

    def ask(
        self,
        prompt: Sequence[int] | str | list[dict],
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int,
        extra_body: dict | None = None,
    ) -> str:
        """The text of one response (``temperature`` 0: greedy): a completion of token ids or text, or a chat reply
        to a list of messages."""
        return self.reply(prompt, max_tokens, temperature, top_p, seed, extra_body).text

    def reply(
        self,
        prompt: Sequence[int] | str | list[dict],
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int,
        extra_body: dict | None = None,
        top_logprobs: int = 0,
    ) -> Reply:
        """:meth:`ask`'s response, and with ``top_logprobs`` the log-probabilities of that many likeliest first
        tokens, where the server returns them."""
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "seed": seed,
            "n": 1,
            "extra_body": extra_body,
        }
        chat = isinstance(prompt, list) and bool(prompt) and isinstance(prompt[0], dict)
        if top_logprobs:
            request.update({"logprobs": True, "top_logprobs": top_logprobs} if chat else {"logprobs": top_logprobs})
        if chat:
            with self._answer("asking for a chat reply (POST /chat/completions)"):
                reply = self.client.chat.completions.create(messages=prompt, **request)  # type: ignore[arg-type]
                text = _text(reply, "chat completions", lambda choice: choice.message.content)
                return Reply(text, _first_token_logprobs(reply.choices[0], chat=True))
        with self._answer("asking for a completion (POST /completions)"):
            reply = self.client.completions.create(
                prompt=prompt if isinstance(prompt, str) else list(prompt),  # type: ignore[arg-type]
                **request,
            )
            text = _text(reply, "completions", lambda choice: choice.text)
            return Reply(text, _first_token_logprobs(reply.choices[0], chat=False))

    @contextmanager
    def _answer(self, doing: str) -> Iterator[None]:
        """Turn what the client raises after its retries into one ServerError naming the fix."""
        import openai

        where = f"{self.url}: {doing}"
        retried = f"after {self.options.retries} retries"
        try:
            yield
        except openai.APITimeoutError:
            raise ServerError(
                f"{where}: no answer within --timeout {self.options.timeout:g} s, {retried}; "
                "raise --timeout or lower --concurrency"
            ) from None
        except openai.APIConnectionError:
            raise ServerError(
                f"{where}: cannot connect, {retried}; start the server or fix --server (e.g. http://127.0.0.1:8000/v1)"
            ) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise ServerError(
                f"{where}: the server refused the API key (HTTP {error.status_code}); "
                "give the right one with --api-key or OPENAI_API_KEY"
            ) from None
        except openai.NotFoundError:
            raise ServerError(
                f"{where}: HTTP 404; --server must be the API's base URL, ending in /v1 (e.g. http://127.0.0.1:8000/v1)"
            ) from None
        except openai.APIStatusError as error:
            raise ServerError(
                f"{where}: HTTP {error.status_code}{' ' + retried if error.status_code >= 500 or error.status_code == 429 else ''}: "
                f"{_said(error)}"
            ) from None
        except (openai.APIResponseValidationError, ValueError, AttributeError, TypeError) as error:
            raise ServerError(
                f"{where}: the reply is not OpenAI's ({_said(error)}); is --server an OpenAI-compatible API?"
            ) from None


def _text(reply, api: str, text_of) -> str:
    """The first choice's text, or a TypeError saying the reply is no OpenAI reply."""
    choices = getattr(reply, "choices", None)
    text = text_of(choices[0]) if isinstance(choices, list) and choices else None
    if not isinstance(text, str):
        raise TypeError(f"no choices[0] text in a {api} reply")
    return text


def _first_token_logprobs(choice, chat: bool) -> dict[str, float] | None:
    """The first token's top log-probabilities in a chat reply (``logprobs.content[0].top_logprobs``) or a completion
    (``logprobs.top_logprobs[0]``); None where the server sent none."""
    logprobs = getattr(choice, "logprobs", None)
    if chat:
        content = getattr(logprobs, "content", None)
        top = getattr(content[0], "top_logprobs", None) if content else None
        return {entry.token: float(entry.logprob) for entry in top} if top else None
    top = getattr(logprobs, "top_logprobs", None)
    return {token: float(value) for token, value in top[0].items()} if top and top[0] else None


def _said(error: Exception) -> str:
    """What the server or the client said, on one line and short."""
    text = " ".join(str(getattr(error, "message", None) or error).split())
    return text[:200] + ("..." if len(text) > 200 else "")
