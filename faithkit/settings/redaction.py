"""Secrets never written: the one place that every writer of faithkit's outputs passes its text through.

An API key, or a password in a server's URL, is given to faithkit to be sent to a server, never to be written.
Each option that carries one says so in its declaration (:func:`faithkit.settings.options.option`'s ``secret``: ``"value"``
for an API key, ``"url"`` for a URL whose userinfo holds one, ``"headers"`` for ``Name: value`` request headers), and
its value is handed to :func:`remember`: by the command line before it parses (so that an error line about a
mistyped flag cannot show it), by the option checks of every declared setting (a config file's ``server:``), and by
the engine for the key it sends (``$OPENAI_API_KEY`` included).

:func:`redact` then writes ``***`` for every secret it was given, wherever it occurs: in every file of
:mod:`faithkit.data.files` (results, ``.meta.json``, provenance sidecars, pages, CSVs, training logs), in
:func:`faithkit.provenance.record`, and in everything the ``faithkit`` command prints (:func:`redacting_streams`:
result tables, logging, error lines, tracebacks). A new writer needs nothing more than to write through them.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO
from urllib.parse import quote, unquote, urlsplit

MASK = "***"
"""What a secret is written as."""

KINDS = ("value", "url", "headers")
"""How an option carries a secret: the whole value; a URL's userinfo (``http://user:KEY@host/v1``); or request
headers written ``Name: value``, each header's value (and its credential after a scheme such as ``Bearer``)."""

_secrets: set[str] = set()
_pattern: re.Pattern | None = None
_lock = threading.Lock()


def secret_parts(value: str, kind: str = "value") -> list[str]:
    """The secrets ``value`` carries as an option of ``kind`` (:data:`KINDS`): the value itself; the URL's userinfo
    and its password (its user name when it has no password); each header's value. Empty parts are none."""
    if not isinstance(value, str) or not value:
        return []
    if kind == "url":
        try:
            userinfo = urlsplit(value.strip()).netloc.rpartition("@")
        except ValueError:  # not a URL at all: keep the whole text secret rather than guess
            return [value]
        if not userinfo[1]:
            return []
        user, _, password = userinfo[0].partition(":")
        return [part for part in (userinfo[0], password or user) if part]
    if kind == "headers":  # each value, and its credential without the scheme ("Bearer KEY": KEY)
        values = [line.partition(":")[2].strip() for line in value.splitlines()]
        return [part for one in values if one for part in {one, one.split()[-1]}]
    return [value]


def remember(value, kind: str = "value") -> None:
    """Redact the secrets of ``value`` (an option of ``kind``; a list: each item) from everything written from now
    on in this process, in the forms a writer may give them (as typed, percent-encoded or decoded, JSON- or
    HTML-escaped)."""
    global _pattern
    values = value if isinstance(value, (list, tuple)) else [value]
    found = {form for one in values for part in secret_parts(one, kind) for form in _forms(part)}
    if not found - _secrets:
        return
    with _lock:
        _secrets.update(found)
        alternatives = sorted(_secrets, key=len, reverse=True)  # the longest first: a key inside a userinfo
        _pattern = re.compile("|".join(map(_alternative, alternatives)))


SHORT = 8
"""Secrets shorter than this (placeholders such as llama.cpp's ``--api-key x``) are redacted only where they stand as
a word of their own: masked inside words, they would corrupt every field name that holds their letters."""


def _alternative(secret: str) -> str:
    if len(secret) >= SHORT:
        return re.escape(secret)
    return rf"(?<![A-Za-z0-9_]){re.escape(secret)}(?![A-Za-z0-9_])"


def _forms(secret: str) -> set[str]:
    forms = {secret, unquote(secret), quote(secret, safe=""), json.dumps(secret)[1:-1], html.escape(secret)}
    forms.update((json.dumps(secret, ensure_ascii=False)[1:-1], shlex.quote(secret)))
    return {form for form in forms if form}


def forget_all() -> None:
    """Forget every secret (a new command in the same process, and tests)."""
    global _pattern
    with _lock:
        _secrets.clear()
        _pattern = None


def redact(text: str) -> str:
    """``text`` with every remembered secret written as :data:`MASK`."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def redacted(value):
    """``value`` (text, or mappings and lists of them, as JSON holds) with every remembered secret in its text (keys
    included) written as :data:`MASK`; other values as they are."""
    if _pattern is None:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redacted(key): redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(item) for item in value)
    return value


class RedactingText:
    """A text stream or file whose every write is :func:`redact` ed first; the rest is the stream's own."""

    def __init__(self, stream: IO):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)  # what the caller gave: print and csv count on it

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __enter__(self):
        self._stream.__enter__()
        return self

    def __exit__(self, *exc):
        return self._stream.__exit__(*exc)

    def __iter__(self):
        return iter(self._stream)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def redacting_streams() -> Iterator[None]:
    """Redact what is printed on stdout and stderr within the block (results, logging, warnings, error lines), and
    the traceback of an exception that escapes it (``sys.excepthook``, and a thread's)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingText(saved[0]), RedactingText(saved[1])
    sys.excepthook = _redacting_excepthook
    threading.excepthook = _redacting_thread_excepthook
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _redacting_excepthook(kind, error, trace) -> None:
    sys.stderr.write(redact("".join(traceback.format_exception(kind, error, trace))))


def _redacting_thread_excepthook(hook_args) -> None:
    if hook_args.exc_type is SystemExit:
        return
    name = getattr(hook_args.thread, "name", "?")
    text = "".join(traceback.format_exception(hook_args.exc_type, hook_args.exc_value, hook_args.exc_traceback))
    sys.stderr.write(redact(f"Exception in thread {name}:\n{text}"))
