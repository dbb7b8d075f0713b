"""One full lab stack shared by the end-to-end tests that can live side by side in it (the
dashboard in a browser, alerts, reports): starting a stack and waiting for every group's first
verdict costs a minute or two, so they pay it once. ``tests/conftest.py`` registers the
fixture for the whole suite; test modules must not import it (a second import would be a
second session fixture, and a second stack).

Each test owns the scenario and the groups it touches (the browser test: ``dead-consumer`` on
payments-ledger and an XSS-named group; alerts: ``poison-message`` on orders-spout; broker
purgatory: ``fetch-purgatory``, whose consumers are group-less and commit nothing;
``backpressure`` on audit-spout) and asserts only about those.
``tests/lab/test_lab_verdicts.py`` keeps a stack of its own: it checks that untouched groups
stay OK for its whole run.

The stack polls the lab cluster every 5 s and runs the status job every 15 s, as the verdicts
test does: a window of 10 commits then lasts about 50 s.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lab.stack import REPO, Stack
from lab.workload.control import start_scenario, stop_scenario
from tests.waiting import StatusRuns, wait_for, wait_for_verdict

SERVICES = ["zookeeper", "kafka", "redis", "workload", "web", "worker", "collector", "beat"]
POLL_S = 5
JOB_S = 15
WINDOW = 10
TOPIC_CONFIG_REFRESH_S = 10
USERNAME = "lab"


def lagwatch_status(run_dir: Path) -> dict[str, Any]:
    """``manage.py lagwatch_status --json`` against the stack in ``run_dir`` (its database is
    all the command needs): what a user's script reads."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings.base",
        "LAGWATCH_DATA_DIR": str(run_dir / "data"),
    }
    out = subprocess.run(
        [sys.executable, "manage.py", "lagwatch_status", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


class LabWorld:
    """What the end-to-end tests need of the shared stack."""

    def __init__(self, stack: Stack, endpoints: dict[str, str]) -> None:
        self.stack = stack
        self.endpoints = endpoints
        self.env = stack.django_env()
        self.web_url = endpoints["web"].rstrip("/")
        self.control = endpoints.get("control", "")  # none without the workload
        self.login = (USERNAME, self.manage("demo_user", USERNAME).stdout.strip())
        self.status_runs = StatusRuns(stack.run_dir / "data")

    @property
    def run_dir(self) -> Path:
        return self.stack.run_dir

    def manage(
        self, *args: str, input: str | None = None, timeout: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` against the stack's database and Redis."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO, env=self.env, input=input, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)}: {done.stderr[-3000:]}")
        return done

    def status(self) -> dict[str, Any]:
        """``lagwatch_status --json``: what a user's script sees."""
        return json.loads(self.manage("lagwatch_status", "--json", timeout=60).stdout)

    def start_scenario(self, name: str, **params: Any) -> dict[str, Any]:
        return start_scenario(self.control, name, **params)

    def stop_scenario(self, name: str) -> dict[str, Any]:
        return stop_scenario(self.control, name)

    def wait_until(
        self, predicate: Callable[[dict[str, Any]], Any], timeout_s: float, what: str
    ) -> Any:
        """The first truthy ``predicate(status document)``, read every few seconds."""
        return wait_for(lambda: predicate(self.status()), timeout_s, what, every=3.0)

    def wait_for_verdict(
        self, predicate: Callable[[dict[str, Any]], Any], timeout_s: float, what: str
    ) -> Any:
        """``wait_until`` for what a status run decides: its deadline is also counted in status
        runs (``tests.waiting.wait_for_verdict``)."""
        return wait_for_verdict(
            lambda: predicate(self.status()), timeout_s, what, self.status_runs, every=3.0
        )


class Browser:
    """A cookie-keeping HTTP client that logs in and posts forms with their CSRF token (pages
    and, with the session, ``/api/v1``)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> tuple[int, bytes, Any]:
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.status, response.read(), response.headers

    def post(self, path: str, form: dict[str, str]) -> tuple[int, bytes]:
        token = next(c.value for c in self.jar if c.name == "csrftoken")
        data = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(
            self.base + path, data=data, headers={"Referer": self.base + path}
        )
        with self.opener.open(request, timeout=30) as response:
            return response.status, response.read()

    def login(self, user: str, password: str) -> None:
        self.get("/accounts/login/")
        self.post("/accounts/login/", {"username": user, "password": password})


def _judged(doc: dict[str, Any]) -> bool:
    """Every demo group collected and every partition evaluated once."""
    groups = {(g["source"], g["group"]) for g in doc["groups"]}
    return len(groups) >= 8 and all(p["evaluated_at"] for p in doc["partitions"])


# The shared stack while it runs, so that the worker can stop it after its last test
# (``shut_down_early``) instead of at the end of the session.
_RUNNING: list[Stack] = []


def shut_down_early() -> None:
    """Stop the shared stack now: its last test has run. A session fixture lives until the
    worker's session ends, and the worker goes on with other modules for many minutes after
    this unit; the stack (broker, Spark every 15 s, workload, collector: ~0.9 of a core) then
    only took CPU from them (a fresh-clone run kept it 36 min for ~15 min of its tests)."""
    while _RUNNING:
        _RUNNING.pop().down()


@pytest.fixture(scope="session")
def lab_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabWorld]:
    stack = Stack(tmp_path_factory.mktemp("lab-world"))
    _RUNNING.append(stack)
    try:
        # The lab's services inherit the environment they start in (lab/services.py): set the
        # knobs for the start only, or every stack started later in the session gets them.
        with environment(
            LAGWATCH_LAB_POLL_S=str(POLL_S),
            LAGWATCH_STATUS_EVERY_S=str(JOB_S),
            LAGWATCH_STATUS_WINDOW_COMMITS=str(WINDOW),
            # retention-risk (tests/lab/test_lab_retention.py) shortens a topic's retention:
            # the source must see it within seconds, not the default 5 minutes.
            LAGWATCH_TOPIC_CONFIG_REFRESH_S=str(TOPIC_CONFIG_REFRESH_S),
        ):
            world = LabWorld(stack, stack.up(SERVICES))  # its manage.py env keeps them
        # ~1-2 min on a quiet machine; ~4 min in a fresh-clone run whose first minute started
        # five stacks at once.
        world.wait_for_verdict(_judged, 480, "every demo group collected and judged once")
        yield world
    finally:
        if stack in _RUNNING:
            _RUNNING.remove(stack)
        stack.down()


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` for the block (a lab stack's services inherit it)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
