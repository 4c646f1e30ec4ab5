"""A local OpenAI-compatible endpoint for tests (the world outside): a stdlib http.server that answers
`GET /v1/models` and one scripted reply per chat request, including garbage, errors and silence on purpose."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "tiny-planner"

Reply = str | Callable[[BaseHTTPRequestHandler], None]


@dataclass
class FakeAPI:
    """Scripted replies, one per chat request: a str is the content; a callable writes the raw response.
    With no reply left it answers `done()`."""

    replies: list[Reply] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    models: list[str] = field(default_factory=lambda: [MODEL])
    url: str = ""


def send_json(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def serve_fake_api() -> Iterator[FakeAPI]:
    """The endpoint on a free local port, its base URL in `url`; shut down on exit."""
    state = FakeAPI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if self.path != "/v1/models":
                send_json(self, 404, b'{"error": "not found"}')
                return
            send_json(self, 200, json.dumps({"data": [{"id": m} for m in state.models]}).encode())

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"body": body, "auth": self.headers.get("Authorization")})
            reply = state.replies.pop(0) if state.replies else "done()"
            if callable(reply):
                reply(self)
                return
            answer = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
            send_json(self, 200, json.dumps(answer).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True  # a reply held back on purpose must not hold up the shutdown
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()
