"""A serving engine (vLLM, SGLang, llama.cpp's server, TGI) asked for completions over its OpenAI-compatible API.

faithkit talks to it through the ``openai`` client; every request is bounded
(:mod:`faithkit.serving.engine_http`): ``--timeout`` seconds in all, from connecting to the reply's
last byte, and a reply no longer than its ``max_tokens`` can need (:func:`reply_cap`). What a
busy or restarting server answers (429, 5xx, timeouts, refused connections) is retried
``--retries`` times with exponential backoff; what is left is one
:class:`~faithkit.errors.ServerError` saying what is wrong and the fix: the server is down or
too slow, the model is not the one it serves, the key is refused, the reply is not OpenAI's
or too long. The API key (and a password in the URL) is given to the client only:
:mod:`faithkit.settings.redaction` keeps it, and the headers made of it, out of every message, log
line and output.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError, ServerError
from ..settings import redaction
from ..settings.options import option
from .engine_http import Call, bounded_call, bounded_client, bounded_map, current_stop

ENDPOINTS = ("completions", "chat")
"""``completions``: ``/v1/completions`` with the prompt faithkit builds (token ids or text); ``chat``:
``/v1/chat/completions`` with the prompt's messages, rendered by the server's own chat template."""

PROMPT_FORMS = ("tokens", "text")
"""How ``/v1/completions`` gets the prompt: faithkit's token ids (exact: what faithkit decodes from), or their text."""


@dataclass(frozen=True)
class EngineOptions:
    """How to reach the server: what a rerun may change without changing any candidate."""

    concurrency: int = option(4, "requests in flight at once", low=1)
    timeout: float = option(
        120.0,
        "seconds a request may take in all, from connecting to the reply's last byte, before it is retried",
        low=0,
        low_open=True,
    )
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


REQUEST_FIELDS = (
    "model",
    "prompt",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "seed",
    "n",
    "logprobs",
    "top_logprobs",
    "stream",
    "stream_options",
)
"""The request fields faithkit sets (or, ``stream``, relies on being unset: it reads one whole reply), which
``--extra-body`` may not set: they would override the prompt, the model or the sampling the output is
fingerprinted by, or the reply size its cap counts on."""

REPLY_BASE_BYTES = 64 * 1024
"""Room in a reply for what is not its tokens (ids, usage, the JSON around them)."""
REPLY_BYTES_PER_TOKEN = 1024
"""Room for one token of a reply, with its log-probability."""
REPLY_BYTES_PER_ALTERNATIVE = 256
"""Room for one of a token's likeliest alternatives (``top_logprobs``)."""
MODELS_REPLY_BYTES = 8 * 1024 * 1024
"""Room for the list of a server's models (GET /models)."""


def reply_cap(max_tokens: int, top_logprobs: int = 0) -> int:
    """The most bytes a reply of ``max_tokens`` tokens may take (with ``top_logprobs`` alternatives per token): what
    is longer is no such reply, and is refused before it fills the memory or the output."""
    return REPLY_BASE_BYTES + max_tokens * (REPLY_BYTES_PER_TOKEN + top_logprobs * REPLY_BYTES_PER_ALTERNATIVE)


def extra_body(text: str) -> dict:
    """argparse type of ``--extra-body``: a JSON object of the engine's own request fields, none of
    :data:`REQUEST_FIELDS`."""
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
    try:
        check_extra_body(value)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def check_extra_body(fields: dict | None) -> None:
    """A ConfigError naming the fields of ``fields`` that faithkit sets itself (:data:`REQUEST_FIELDS`)."""
    taken = [name for name in fields or {} if name in REQUEST_FIELDS]
    if taken:
        raise ConfigError(
            f"sets {', '.join(taken)}, which faithkit sets itself (the model, prompt and sampling come from their "
            "own options); drop them"
        )


PLACEHOLDER_KEY = "none"
"""The key sent when none is given (local servers need none; the client needs one)."""

RETRY_PAUSE = 0.5
"""Seconds before the first retry; each further one waits twice as long, up to :data:`MAX_RETRY_PAUSE`."""
MAX_RETRY_PAUSE = 8.0


def api_key(given: str | None) -> str:
    """The key to send: ``given``, else ``$OPENAI_API_KEY``, else :data:`PLACEHOLDER_KEY`."""
    return given or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY


def remember_credentials(url: str, key: str | None) -> None:
    """Hand :mod:`faithkit.settings.redaction` every form the server's credentials take: the key, the URL's userinfo, and the
    ``Authorization`` headers made of them (``Bearer KEY``; ``Basic`` and the base64 of ``user:password``), which a
    server may echo in an error."""
    redaction.remember(url, "url")
    headers = [f"Authorization: Bearer {key}"] if key else []
    userinfo = urlsplit(url.strip()).netloc.rpartition("@")[0]
    if userinfo:
        user, _, password = (unquote(part) for part in userinfo.partition(":"))
        headers.append(f"Authorization: Basic {base64.b64encode(f'{user}:{password}'.encode()).decode()}")
    if key:
        redaction.remember(key, "value")
    redaction.remember("\n".join(headers), "headers")


@dataclass(frozen=True)
class Reply:
    """A response's text and, when asked for and served, its first token's likeliest alternatives: token ->
    log-probability."""

    text: str
    first_token: dict[str, float] | None = None


class Engine:
    """One server and one of its models; :meth:`ask` returns a response's text, :meth:`map` asks many at once."""

    def __init__(self, url: str, model: str | None, key: str, options: EngineOptions):
        from openai import OpenAI

        remember_credentials(url, None if key == PLACEHOLDER_KEY else key)
        self.url = url
        self.options = options
        self.client = OpenAI(
            base_url=url,
            api_key=key,
            timeout=options.timeout,
            max_retries=0,
            http_client=bounded_client(options.timeout),
        )
        self.model = self._served_model(model)

    def _served_model(self, asked: str | None) -> str:
        """``asked`` when the server serves it; without one, the server's only model. Else a ServerError."""
        listing = self._request(
            "listing its models (GET /models)", MODELS_REPLY_BYTES, lambda: self.client.models.list().data
        )
        served = [entry.id for entry in listing]
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

    def map(self, function: Callable, items: Iterable) -> list:
        """``[function(item) for item in items]``, ``concurrency`` at a time; an interrupt or the first error stops
        the requests in flight at once (:func:`faithkit.serving.engine_http.bounded_map`)."""
        return bounded_map(function, items, self.options.concurrency)

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
        check_extra_body(extra_body)
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
        cap = reply_cap(max_tokens, top_logprobs)
        if chat:

            def chat_reply() -> Reply:
                reply = self.client.chat.completions.create(messages=prompt, **request)  # type: ignore[arg-type]
                text = _text(reply, "chat completions", lambda choice: choice.message.content)
                return Reply(text, _first_token_logprobs(reply.choices[0], chat=True))

            return self._request("asking for a chat reply (POST /chat/completions)", cap, chat_reply)

        def completion() -> Reply:
            reply = self.client.completions.create(
                prompt=prompt if isinstance(prompt, str) else list(prompt),  # type: ignore[arg-type]
                **request,
            )
            text = _text(reply, "completions", lambda choice: choice.text)
            return Reply(text, _first_token_logprobs(reply.choices[0], chat=False))

        return self._request("asking for a completion (POST /completions)", cap, completion)

    def _request(self, doing: str, cap: int, send: Callable):
        """``send()`` within ``--timeout`` and ``cap`` bytes of reply, retried as the module docstring says; what is
        left is one ServerError naming the fix."""
        import openai

        for attempt in range(self.options.retries + 1):
            with bounded_call(self.options.timeout, cap) as call:
                try:
                    return send()
                except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as error:
                    if call.too_large or call.stop.is_set() or attempt == self.options.retries:
                        raise self._refusal(doing, error, call) from None
                except (openai.OpenAIError, ValueError, AttributeError, TypeError) as error:
                    raise self._refusal(doing, error, call) from None
            if current_stop().wait(min(RETRY_PAUSE * 2**attempt, MAX_RETRY_PAUSE)):
                break
        raise ServerError(f"{self.url}: {doing}: stopped")

    def _refusal(self, doing: str, error: Exception, call: Call) -> ServerError:
        """What the client raised, after the retries, as one ServerError naming the fix."""
        import openai

        where, retried = f"{self.url}: {doing}", f"after {self.options.retries} retries"
        if call.too_large:
            return ServerError(
                f"{where}: the reply is over {call.cap:,} bytes, more than its max_tokens can take; is --server an "
                "OpenAI-compatible API that keeps to max_tokens?"
            )
        if call.timed_out or isinstance(error, openai.APITimeoutError):
            return ServerError(
                f"{where}: no whole reply within --timeout {self.options.timeout:g} s (connecting and the whole "
                f"reply), {retried}; raise --timeout or lower --concurrency"
            )
        if isinstance(error, openai.APIConnectionError):
            return ServerError(
                f"{where}: cannot connect, {retried}; start the server or fix --server (e.g. http://127.0.0.1:8000/v1)"
            )
        if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return ServerError(
                f"{where}: the server refused the API key (HTTP {error.status_code}); "
                "give the right one with --api-key or OPENAI_API_KEY"
            )
        if isinstance(error, openai.NotFoundError):
            return ServerError(
                f"{where}: HTTP 404; --server must be the API's base URL, ending in /v1 (e.g. http://127.0.0.1:8000/v1)"
            )
        if isinstance(error, openai.APIStatusError):
            busy = error.status_code >= 500 or error.status_code == 429
            return ServerError(f"{where}: HTTP {error.status_code}{' ' + retried if busy else ''}: {_said(error)}")
        return ServerError(
            f"{where}: the reply is not OpenAI's ({_said(error)}); is --server an OpenAI-compatible API?"
        )


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


_CREDENTIAL = re.compile(r"(?i)\b(authorization|api[-_ ]?key|x-api-key|bearer|basic)(\W{1,4})[^\s\"',;}]+")
"""A credential a server's error body echoes (``Authorization: Bearer sk-…``, ``"api_key": "…"``)."""


def _said(error: Exception) -> str:
    """What the server or the client said, on one line and short, without a credential it echoes (the ones faithkit
    sent are redacted anyway; this also drops what it did not send, a proxy's or another client's)."""
    text = " ".join(str(getattr(error, "message", None) or error).split())
    text = _CREDENTIAL.sub(lambda match: f"{match.group(1)}{match.group(2)}{redaction.MASK}", text)
    return text[:200] + ("..." if len(text) > 200 else "")
