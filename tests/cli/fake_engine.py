"""A tiny OpenAI-compatible server on 127.0.0.1 that misbehaves on demand, for the bad-server cases of
``faithkit candidates`` (the real engine, llama.cpp's server, is in tests/test_llama_server.py).

Its completion is a text made from the prompt, the temperature and the seed, so a test can tell which request a
response answers. ``behaviour`` says how it fails: ``slow`` (answers after ``delay`` s), ``flaky`` (HTTP 500 to the
first ``failures`` completion requests), ``malformed`` (a 200 whose body is not JSON), ``alien`` (JSON, but no
OpenAI reply), ``crash`` (stops listening after ``answers`` completions), ``trickle`` (sends its reply, headers
included, one byte every ``delay`` s; GET /models too), ``hang`` (answers ``answers`` completions, then none until
stopped), ``flood`` (a completion of ``flood`` characters), ``echo`` (HTTP 500 whose body repeats the request's
Authorization header), or a required API ``key`` (its 401 repeats the header too). For a judge it replies
``answer`` instead, with the first token's ``top_logprobs`` (token -> log-probability) when a request asks for
logprobs.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "fake-model"


def reply_text(prompt, temperature: float, seed) -> str:
    """The fake's completion of ``prompt``: tells the prompt (by a digest), whether it was greedy, and the seed."""
    digest = hashlib.sha256(json.dumps(prompt).encode()).hexdigest()[:8]
    return f" answer {digest} greedy" if temperature == 0 else f" answer {digest} seed {seed}"


class FakeEngine:
    """Start with ``with FakeEngine(...) as fake:``; ``fake.url`` is the base URL, ``fake.prompts`` every
    completion request's body, in the order they came."""

    def __init__(
        self,
        behaviour: str = "ok",
        *,
        delay=0.0,
        failures=0,
        answers=0,
        key=None,
        answer=None,
        top_logprobs=None,
        flood=0,
    ):
        self.behaviour, self.delay, self.failures, self.answers, self.key = behaviour, delay, failures, answers, key
        self.answer, self.top_logprobs, self.flood = answer, top_logprobs, flood
        self.released = threading.Event()  # a hanging server's requests end when it stops
        self.first_request: float | None = None  # time.monotonic() of the first request of any kind
        self.requests: list[dict] = []
        self.lock, self.stopped = threading.Lock(), False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, address: None  # a client that gave up (timeout) is no news
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering and close the port (new connections are refused)."""
        with self.lock:
            if self.stopped:
                return
            self.stopped = True
        self.released.set()
        if self.thread.is_alive():
            self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                if fake.behaviour == "trickle":
                    head = f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
                    for byte in (head + f"Content-Length: {len(data)}\r\n\r\n").encode() + data:
                        if fake.released.wait(fake.delay):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                if fake.key is None or self.headers.get("Authorization") == f"Bearer {fake.key}":
                    return True
                said = f"Invalid API key: Authorization: {self.headers.get('Authorization')}"
                self._send(401, {"error": {"message": said, "type": "invalid_request_error"}})
                return False

            def do_GET(self):
                fake.first_request = fake.first_request or time.monotonic()
                if not self._authorised():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "me"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not self._authorised():
                    return
                with fake.lock:
                    fake.requests.append(body)
                    count = len(fake.requests)
                if fake.behaviour == "crash" and count > fake.answers:
                    threading.Thread(target=fake.stop).start()
                    self.close_connection = True
                    self.connection.close()
                    return
                if fake.behaviour == "flaky" and count <= fake.failures:
                    return self._send(500, {"error": {"message": "overloaded"}})
                if fake.behaviour == "hang" and count > fake.answers:
                    fake.released.wait()
                    return
                if fake.behaviour == "echo":
                    said = f"upstream failed for request with authorization: {self.headers.get('Authorization')}"
                    return self._send(500, {"error": {"message": said}})
                if fake.behaviour == "slow":
                    time.sleep(fake.delay)
                if fake.behaviour == "malformed":
                    return self._send(200, b'{"id": "cmpl-1", "choices": [{"text": "cut he')
                if fake.behaviour == "alien":
                    return self._send(200, {"result": "hello"})
                if body.get("model") != MODEL:
                    return self._send(404, {"error": {"message": f"model {body.get('model')} not found"}})
                prompt = body.get("messages") if self.path.endswith("/chat/completions") else body["prompt"]
                text = fake.answer or reply_text(prompt, body.get("temperature", 1.0), body.get("seed"))
                text = "x" * fake.flood if fake.behaviour == "flood" else text
                top = fake.top_logprobs if body.get("logprobs") else None
                if self.path.endswith("/chat/completions"):
                    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                    if top:
                        alternatives = [
                            {"token": token, "logprob": value, "bytes": None} for token, value in top.items()
                        ]
                        first = {"token": next(iter(top)), "logprob": next(iter(top.values())), "bytes": None}
                        choice["logprobs"] = {"content": [{**first, "top_logprobs": alternatives}]}
                    kind = "chat.completion"
                else:
                    logprobs = {"tokens": [next(iter(top))], "top_logprobs": [top]} if top else None
                    choice = {"index": 0, "text": text, "finish_reason": "stop", "logprobs": logprobs}
                    kind = "text_completion"
                self._send(
                    200, {"id": f"cmpl-{count}", "object": kind, "created": 0, "model": MODEL, "choices": [choice]}
                )

        return Handler
