"""The workload's HTTP control endpoint (stdlib only; runs on its own threads).

    GET  /lab/status                    world status and active scenarios
    GET  /lab/scenarios                 the scenario table with docs and parameters
    POST /lab/scenarios/<name>/start    JSON object of parameters (empty body = defaults)
    POST /lab/scenarios/<name>/stop

Errors are JSON `{"error": ...}`: 404 for an unknown path or scenario, 400 for bad
parameters or a body that is not a JSON object, 500 when the scenario itself failed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lab.workload.params import ScenarioError
from lab.workload.runner import ScenarioRunner, UnknownScenarioError

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024


class _HTTPError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    def __init__(
        self,
        runner: ScenarioRunner,
        port: int,
        host: str = "127.0.0.1",
        extra_status: Callable[[], dict[str, Any]] | None = None,
    ) -> None:
        self.runner = runner
        self._extra_status = extra_status or dict
        handler = type("Handler", (_Handler,), {"control": self})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="control-http", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self._thread.start()
        log.info("control endpoint on %s/lab/status", self.url)

    def stop(self) -> None:
        if self._thread.is_alive():  # shutdown() would wait forever for a loop never started
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.server_close()

    def status(self) -> dict[str, Any]:
        return {
            **self.runner.world.status(),
            **self._extra_status(),
            "scenarios": self.runner.active(),
        }


class _Handler(BaseHTTPRequestHandler):
    control: ControlServer
    server_version = "lagwatch-lab-workload"

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    def _dispatch(self, method: str) -> None:
        try:
            status, body = self._route(method, self.path.split("?", 1)[0].rstrip("/"))
        except _HTTPError as exc:
            status, body = exc.status, {"error": str(exc)}
        except UnknownScenarioError as exc:
            status, body = HTTPStatus.NOT_FOUND, {"error": str(exc)}
        except ScenarioError as exc:
            status, body = HTTPStatus.BAD_REQUEST, {"error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - answer, log, keep serving
            log.exception("control request %s %s failed", method, self.path)
            status = HTTPStatus.INTERNAL_SERVER_ERROR
            body = {"error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(body, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, path: str) -> tuple[HTTPStatus, Any]:
        runner = self.control.runner
        parts = path.strip("/").split("/")
        if method == "GET" and parts == ["lab", "status"]:
            return HTTPStatus.OK, self.control.status()
        if method == "GET" and parts == ["lab", "scenarios"]:
            return HTTPStatus.OK, runner.catalogue()
        if len(parts) == 4 and parts[:2] == ["lab", "scenarios"] and parts[3] in ("start", "stop"):
            if method != "POST":
                raise _HTTPError(HTTPStatus.METHOD_NOT_ALLOWED, f"use POST for {path}")
            if parts[3] == "start":
                return HTTPStatus.OK, runner.start(parts[2], self._json_body())
            return HTTPStatus.OK, runner.stop(parts[2])
        raise _HTTPError(HTTPStatus.NOT_FOUND, f"no endpoint {method} {path}")

    def _json_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ScenarioError(f"body larger than {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise ScenarioError(f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ScenarioError("body must be a JSON object of parameters")
        return body
