"""A local HTTP server standing in for Lagwatch's ingest endpoint: it records each POST and
answers from a script (status, headers, delay), 202 once the script is used up."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


@dataclass
class Answer:
    status: int = 202
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: str = '{"accepted": 1}'


class IngestServer:
    def __init__(self, port: int = 0) -> None:
        self.received: list[Received] = []
        self.attempts: list[float] = []  # every request, answered or not
        self.script: deque[Answer] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.attempts.append(time.monotonic())
                    answer = server.script.popleft() if server.script else Answer()
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.status < 300:
                    with server._lock:
                        server.received.append(
                            Received(self.path, dict(self.headers), json.loads(body),
                                     time.monotonic())  # fmt: skip
                        )
                payload = answer.body.encode()
                try:
                    self.send_response(answer.status)
                    for k, v in answer.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up waiting

            def log_message(self, *_args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/api/v1/ingest/lab"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
