"""Every request to a serving engine bounded: a total deadline, a reply size cap, and a stop that takes effect at once.

An HTTP client's timeout bounds each read, not the request: a server that sends one byte a
second never times out, and one that sends 50 million characters is read whole. So every
connection of the engine's client reads through :class:`BoundedStream`, which reads in
slices of :data:`POLL_SECONDS` and ends the request (as a timeout) once the :class:`Call` it
serves is past its deadline — connecting and the whole reply included — or as soon as the
reply is over the call's byte cap, or its ``stop`` is set. :func:`bounded_map` runs requests
``concurrency`` at a time on daemon threads: the process never waits for them, and Ctrl-C or
SIGTERM stops the requests in flight within a slice.

Which stream a connection has is set where the client is made (:func:`bounded_client`): the
openai client's HTTP pools are given :class:`BoundedBackend` as their network backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpcore2

POLL_SECONDS = 0.2
"""The longest a read waits before it looks at its call's deadline and stop again."""


@dataclass
class Call:
    """One request's bounds: its ``deadline`` (``time.monotonic()``), its reply's ``cap`` in bytes and the ``stop``
    that ends it; what ended it, if anything (``timed_out``, ``too_large``)."""

    deadline: float
    cap: int
    stop: threading.Event
    received: int = 0
    timed_out: bool = False
    too_large: bool = False

    def left(self) -> float:
        return self.deadline - time.monotonic()


_local = threading.local()
_never = threading.Event()


@contextmanager
def bounded_call(seconds: float, cap: int) -> Iterator[Call]:
    """Bound the requests this thread makes within the block: ``seconds`` in all, a reply of at most ``cap`` bytes,
    and the stop of the :func:`bounded_map` running it."""
    call = Call(time.monotonic() + seconds, cap, getattr(_local, "stop", None) or _never)
    _local.call = call
    try:
        yield call
    finally:
        _local.call = None


def current_stop() -> threading.Event:
    """The stop of the :func:`bounded_map` this thread works for (an event never set outside one)."""
    return getattr(_local, "stop", None) or _never


class BoundedStream(httpcore2.NetworkStream):
    """A connection whose reads and writes keep to the bounds of the thread's :class:`Call` (none outside one)."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        call: Call | None = getattr(_local, "call", None)
        if call is None:
            return self._stream.read(max_bytes, timeout)
        while True:
            if call.stop.is_set():
                raise httpcore2.ReadError("stopped")
            left = call.left()
            if left <= 0:
                call.timed_out = True
                raise httpcore2.ReadTimeout("past the request's deadline")
            try:
                data = self._stream.read(max_bytes, min(left, POLL_SECONDS))
            except httpcore2.ReadTimeout:
                continue
            call.received += len(data)
            if call.received > call.cap:
                call.too_large = True
                raise httpcore2.ReadError("the reply is over its cap")
            return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _within(timeout))

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None):
        return BoundedStream(self._stream.start_tls(ssl_context, server_hostname, _within(timeout)))

    def close(self) -> None:
        self._stream.close()

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class BoundedBackend(httpcore2.NetworkBackend):
    """A network backend whose connections are :class:`BoundedStream` s; connecting keeps to the call's deadline."""

    def __init__(self, backend):
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address=None, socket_options=None):
        stream = self._backend.connect_tcp(host, port, _within(timeout), local_address, socket_options)
        return BoundedStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None):
        return BoundedStream(self._backend.connect_unix_socket(path, _within(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _within(timeout: float | None) -> float | None:
    """``timeout``, shortened to what the thread's call has left."""
    call: Call | None = getattr(_local, "call", None)
    if call is None:
        return timeout
    left = max(call.left(), 0.001)
    return left if timeout is None else min(timeout, left)


def bounded_client(timeout: float):
    """The openai client's HTTP client (``http_client=``), each of whose connection pools (the direct one and a proxy's
    from the environment) connects through :class:`BoundedBackend`."""
    import openai

    client = openai.DefaultHttpx2Client(timeout=timeout)
    for transport in [client._transport, *client._mounts.values()]:
        pool = getattr(transport, "_pool", None)
        if not isinstance(pool, httpcore2.ConnectionPool):
            continue  # no pool to bound: a mount that routes nowhere (NO_PROXY)
        pool._network_backend = BoundedBackend(pool._network_backend)
    return client


@dataclass
class _Work:
    """What the threads of one :func:`bounded_map` share."""

    items: Iterator
    results: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)


def bounded_map(function: Callable, items: Iterable, concurrency: int, name: str = "engine") -> list:
    """``[function(item) for item in items]``, ``concurrency`` calls at a time on daemon threads. The first error
    stops the other calls (their requests end within :data:`POLL_SECONDS`) and is raised; so does Ctrl-C or SIGTERM
    in the calling thread, and no thread outlives the call's reason to wait for it."""
    items = list(items)
    work = _Work(iter(enumerate(items)))
    threads = [
        threading.Thread(target=_worker, args=(function, work), name=f"{name}-{i}", daemon=True)
        for i in range(min(concurrency, len(items)))
    ]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(POLL_SECONDS)
    finally:
        work.stop.set()  # an interrupt, or an error in one thread: the others' requests stop
    if work.errors:
        raise work.errors[0]
    return [work.results[index] for index in range(len(items))]


def _worker(function: Callable, work: _Work) -> None:
    _local.stop = work.stop
    while not work.stop.is_set():
        with work.lock:
            index, item = next(work.items, (None, None))
        if index is None:
            return
        try:
            work.results[index] = function(item)
        except BaseException as error:  # said by the caller's thread, once
            if not work.stop.is_set():
                work.errors.append(error)
            work.stop.set()
            return
