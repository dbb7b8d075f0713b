"""Client of the workload's control endpoint (used by `python -m lab scenario ...` and tests).

Every failure becomes a `ControlError` whose message says what the server answered, so a
CLI can print it as is.
"""

from __future__ import annotations

import contextlib
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

# Starting a scenario may wait for consumers to leave or a service to stop (~5-15 s).
DEFAULT_TIMEOUT_S = 60.0


class ControlError(RuntimeError):
    """The control endpoint refused the request or could not be reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def list_scenarios(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    return _call("GET", url, "/lab/scenarios", timeout=timeout)


def start_scenario(
    url: str, name: str, timeout: float = DEFAULT_TIMEOUT_S, **params: Any
) -> dict[str, Any]:
    path = f"/lab/scenarios/{quote(name, safe='')}/start"
    return _call("POST", url, path, body=params, timeout=timeout)


def stop_scenario(url: str, name: str, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    return _call("POST", url, f"/lab/scenarios/{quote(name, safe='')}/stop", timeout=timeout)


def workload_status(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    return _call("GET", url, "/lab/status", timeout=timeout)


def _call(
    method: str, url: str, path: str, body: dict[str, Any] | None = None, timeout: float = 60.0
) -> Any:
    full = url.rstrip("/") + path
    data = json.dumps(body or {}).encode() if method == "POST" else None
    req = urllib.request.Request(
        full, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")
        with contextlib.suppress(ValueError, AttributeError):
            detail = json.loads(detail).get("error", detail)
        raise ControlError(f"{method} {full}: HTTP {exc.code}: {detail}", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ControlError(
            f"{method} {full}: workload control endpoint not reachable ({reason}); "
            "is the workload running (python -m lab status)?"
        ) from None
    except ValueError as exc:
        raise ControlError(f"{method} {full}: answer is not JSON ({exc})") from None
