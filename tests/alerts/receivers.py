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
    """A real HTTP server: records every POST; answers with ``status``, ``reply_headers`` and
    ``reply_body`` (settable), or with the next of ``replies`` while any are queued."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.status = 200
        self.reply_headers: dict[str, str] = {}
        self.reply_body = b"ok"
        self.replies: list[tuple[int, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append({
                    "path": self.path, "headers": dict(self.headers),
                    "body": json.loads(body or b"null"), "at": time.time(),
                })  # fmt: skip
                status, headers, reply = (
                    receiver.replies.pop(0) if receiver.replies
                    else (receiver.status, receiver.reply_headers, receiver.reply_body)
                )  # fmt: skip
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.base}/hooks/T000/SECRETTOKEN123"
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
    """Accepts every mail, except a recipient with replies queued in ``rcpt_replies``: each
    RCPT TO of that address is answered with the next one (e.g. "550 5.1.1 No such user")."""

    def __init__(self) -> None:
        self.messages: list = []
        self.rcpt_replies: dict[str, list[str]] = {}
        self.rcpt_seen: list[str] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        self.rcpt_seen.append(address)
        queued = self.rcpt_replies.get(address)
        if queued:
            return queued.pop(0)
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(rcpt_options)
        return "250 OK"

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

    def refuse(self, address: str, *replies: str) -> None:
        """Answer the next RCPT TO of ``address`` with each of ``replies`` in turn, then accept."""
        self.sink.rcpt_replies.setdefault(address, []).extend(replies)

    def wait(self, count: int, timeout_s: float = 10) -> list:
        wait_for(lambda: len(self.messages) >= count, timeout_s, f"{count} email(s)")
        return self.messages

    def close(self) -> None:
        self.controller.stop()
