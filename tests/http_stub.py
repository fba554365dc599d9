"""A tiny local HTTP server that answers OpenAI-style requests from a script: slow, failing or garbage
replies exercise the real openai client and our retry, timeout and fallback logic."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class StubReply:
    """One scripted answer: HTTP status, body (dict -> JSON, str -> raw text) and a delay before it."""

    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    delay_s: float = 0.0


def completion(
    content: str, *, finish_reason: str = "stop", prompt_tokens: int = 11, completion_tokens: int = 7
) -> StubReply:
    """A well-formed chat completion whose message is `content`."""
    return StubReply(
        body={
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": "stub-model",
            "choices": [
                {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def error(status: int, message: str = "stub error") -> StubReply:
    return StubReply(status=status, body={"error": {"message": message, "type": "stub"}})


Script = Callable[[dict[str, Any]], StubReply]


class StubServer:
    """Records every request body; answers with `script(body)` (or the next reply of a list)."""

    def __init__(self, script: Script | list[StubReply]) -> None:
        self.requests: list[dict[str, Any]] = []
        if isinstance(script, list):
            replies = list(script)
            self.script: Script = lambda _body: replies.pop(0)
        else:
            self.script = script

    def handle(self, path: str, body: dict[str, Any]) -> StubReply:
        self.requests.append({"path": path, **body})
        if path.endswith("/models"):
            return StubReply(body={"object": "list", "data": [{"id": "served-model", "object": "model"}]})
        return self.script(body)


@contextmanager
def stub_server(script: Script | list[StubReply]) -> Iterator[tuple[str, StubServer]]:
    """Serve on a free loopback port; yields (base_url, server)."""
    stub = StubServer(script)

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            reply = stub.handle(self.path, json.loads(raw) if raw else {})
            time.sleep(reply.delay_s)
            data = reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/plain" if isinstance(reply.body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                pass

        do_POST = _answer
        do_GET = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", stub
    finally:
        server.shutdown()
        server.server_close()
