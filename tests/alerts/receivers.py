"""Real receivers for alert notices, in the test's own process: an HTTP server (webhook,
Slack) and an SMTP server (aiosmtpd). Used by the unit tests, the lab test and the latency
benchmark."""

from __future__ import annotations

import json
import socket
import threading
import time
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from tests.waiting import wait_for


class HookReceiver:
    """A real HTTP server: records every POST; answers with ``status`` (settable)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append({
                    "path": self.path, "headers": dict(self.headers),
                    "body": json.loads(body or b"null"), "at": time.time(),
                })  # fmt: skip
                self.send_response(receiver.status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/T000/SECRETTOKEN123"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self, notice: str | None = None) -> list[dict]:
        return [
            r["body"] for r in self.requests if notice is None or r["body"].get("notice") == notice
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MailSink:
    def __init__(self) -> None:
        self.messages: list = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        msg = message_from_bytes(envelope.content, policy=policy.default)
        self.messages.append({"to": envelope.rcpt_tos, "msg": msg, "at": time.time()})
        return "250 OK"


class SmtpReceiver:
    def __init__(self) -> None:
        self.sink = MailSink()
        self.host = "127.0.0.1"
        self.port = free_port()
        self.controller = Controller(self.sink, hostname=self.host, port=self.port)
        self.controller.start()

    @property
    def messages(self) -> list:
        return self.sink.messages

    def wait(self, count: int, timeout_s: float = 10) -> list:
        wait_for(lambda: len(self.messages) >= count, timeout_s, f"{count} email(s)")
        return self.messages

    def close(self) -> None:
        self.controller.stop()
