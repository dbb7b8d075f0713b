"""A smoke test of the production run without Docker (``python -m lab up --production``).

The stack runs what docker-compose.yml runs, on this machine: gunicorn with
``dashboard.settings.production`` on PostgreSQL, the Celery worker, collector and beat with the
same settings, Redis, Kafka, ZooKeeper and the workload. The test speaks to the web server as
the TLS-terminating proxy in front of it would (``X-Forwarded-Proto: https``, which the
production settings trust only because the mode sets ``DJANGO_SECURE_PROXY_SSL_HEADER=1``, as
compose does) and, as a browser behind that proxy, sends its secure cookies. Plain HTTP without
the header is still redirected: nothing of the production settings is weakened.

Checked: the database is PostgreSQL and the deployment check is clean; a user with a role logs
in and sees every page; ``/api/v1`` with a token (refused without); ``/v3`` and ``/metrics``;
an ingest push with the token (refused without); one alert of a rule of this test delivered to
a webhook receiver in this process when the ``poison-message`` scenario stalls a spout.

Last, two outages under the same stack (once the alert is in: they would delay it), each with
every other process left running and collection resuming without anyone restarting anything:
Redis stopped under beat (Celery's broker and the collection locks; it comes back empty, not
even the queues' bindings), then PostgreSQL restarted (Django's persistent connections in
gunicorn and the Celery workers are broken and must be replaced; the health check says 503
meanwhile). What the collector stored is read from PostgreSQL directly.
"""

from __future__ import annotations

import gzip
import http.cookiejar
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import Message
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lab.postgres import stack_database_url
from lab.services import FORWARDED_PROTO_HEADER, GUNICORN_WORKERS, LAB_CLUSTER
from lab.stack import REPO, Stack
from lab.workload.control import start_scenario, stop_scenario
from tests.alerts.receivers import HookReceiver
from tests.collectors.ingest_documents import producer_doc
from tests.lab_world import environment
from tests.waiting import StatusRuns, wait_for, wait_for_verdict

pytestmark = pytest.mark.lab

# Faster than the lab's defaults, so that a stuck spout is judged within a minute: a poll
# every 3 s, the status job every 10 s over a window of 6 commits.
POLL_S, JOB_S, WINDOW = 3, 10, 6
KNOBS = {
    "LAGWATCH_LAB_POLL_S": str(POLL_S),
    "LAGWATCH_STATUS_EVERY_S": str(JOB_S),
    "LAGWATCH_STATUS_WINDOW_COMMITS": str(WINDOW),
}
# The STALL needs a window of unchanged commits and two status runs after it (the rule asks
# for one evaluation); this waits three times that, plus the worker's queue, so a loaded
# machine is slow rather than red.
FIRE_TIMEOUT_S = 3 * (WINDOW * POLL_S + 2 * JOB_S) + 60
RULE = "smoke: orders-spout stuck"
SPOUT = "orders-spout"
USERNAME = "smoke"


class _BehindTls(http.cookiejar.DefaultCookiePolicy):
    """The browser's side of the proxy is HTTPS: it sends the ``Secure`` cookies (session,
    CSRF) that the production settings set; the proxy passes them on over plain HTTP."""

    def return_ok_secure(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return True


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer to look at, never followed (an ``https://`` one cannot be)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Proxied:
    """HTTP to the web server as a TLS-terminating proxy forwards it, with a cookie jar."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self.origin = "https://" + urllib.parse.urlsplit(self.base).netloc
        self.jar = http.cookiejar.CookieJar(policy=_BehindTls())
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect
        )

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        proxied: bool = True,
    ) -> tuple[int, Message, bytes]:
        wanted = dict(headers or {})
        if proxied:
            wanted.setdefault(*FORWARDED_PROTO_HEADER)
        request = urllib.request.Request(self.base + path, data=body, headers=wanted, method=method)
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as answer:  # 3xx (not followed), 4xx, 5xx
            with answer:
                return answer.code, answer.headers, answer.read()

    def get(self, path: str, **kwargs: Any) -> tuple[int, Message, bytes]:
        return self.request("GET", path, **kwargs)

    def login(self, username: str, password: str) -> None:
        """The login form, its CSRF token and, as a browser on HTTPS sends it, the Referer."""
        status, _, _ = self.get("/accounts/login/")
        assert status == 200
        token = next(c.value for c in self.jar if c.name == "csrftoken")
        form = {"username": username, "password": password, "csrfmiddlewaretoken": token}
        status, headers, body = self.request(
            "POST",
            "/accounts/login/",
            urllib.parse.urlencode(form).encode(),
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": self.origin + "/accounts/login/",
            },
        )
        assert status == 302, body[-2000:]
        assert headers["Location"] == "/", headers["Location"]
        assert any(c.name == "sessionid" and c.secure for c in self.jar)


class ProductionRun:
    """The running stack, and ``manage.py`` in its environment (what an operator's shell has
    after ``eval "$(python -m lab env)"``)."""

    def __init__(self, stack: Stack, endpoints: dict[str, str]) -> None:
        self.stack = stack
        self.endpoints = endpoints
        self.env = stack.django_env()  # production settings, PostgreSQL, the run's secret key
        self.web = endpoints["web"].rstrip("/")
        self.control = endpoints["control"]

    def manage(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO, env=self.env, input=input, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)}: {done.stderr[-3000:]}")
        return done

    def shell(self, code: str) -> str:
        """The last line ``code`` prints (Django 5.2's shell first counts its imports)."""
        return self.manage("shell", "-c", code).stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProductionRun]:
    stack = Stack(tmp_path_factory.mktemp("production-run"))
    try:
        with environment(**KNOBS):  # for the start only: the services inherit them
            t0 = time.monotonic()
            endpoints = stack.up(production=True)
        print(f"production stack up in {time.monotonic() - t0:.0f} s", flush=True)
        yield ProductionRun(stack, endpoints)
    finally:
        stack.down()


@dataclass
class Armed:
    hook: HookReceiver
    poisoned_at: float


@pytest.fixture(scope="module")
def armed(run: ProductionRun) -> Iterator[Armed]:
    """A webhook channel and a rule of this test (``alerts_config import``), then the
    ``poison-message`` scenario on orders-spout partition 0. The first test asks for it, so
    the alert's wait overlaps the other checks; the last test waits for the notice."""
    hook = HookReceiver()
    try:
        config = {
            "channels": [{"name": "smoke-hook", "kind": "webhook", "url": hook.url}],
            "rules": [{
                "name": RULE, "group_pattern": SPOUT, "statuses": ["STALL", "STOP", "ERR"],
                "min_evaluations": 1, "severity": "critical", "channels": ["smoke-hook"],
            }],
        }  # fmt: skip
        run.manage("alerts_config", "import", "-", input=json.dumps(config))
        poisoned_at = time.time()
        start_scenario(run.control, "poison-message")
        try:
            yield Armed(hook, poisoned_at)
        finally:
            stop_scenario(run.control, "poison-message")
    finally:
        hook.close()


@pytest.fixture(scope="module")
def token(run: ProductionRun) -> str:
    return run.manage("api_token", "create", "smoke", "--scope", "read", "--quiet").stdout.strip()


def _groups(run: ProductionRun, token: str) -> list[dict[str, Any]]:
    client = Proxied(run.web)
    status, _, body = client.get("/api/v1/groups/", headers={"Authorization": f"Bearer {token}"})
    assert status == 200, body[:500]
    return json.loads(body)["results"]


def test_the_stack_is_the_production_shape(run: ProductionRun, armed: Armed) -> None:
    """gunicorn serves production settings on PostgreSQL; the deployment check is clean.
    (``armed``: the alert's scenario runs from here on; the last test waits for its notice.)"""
    shell = "from django.conf import settings; from django.db import connection; " \
        "print(connection.vendor, settings.SETTINGS_MODULE, settings.DEBUG)"  # fmt: skip
    assert run.shell(shell).split() == [
        "postgresql", "dashboard.settings.production", "False",
    ]  # fmt: skip
    assert run.manage("check", "--deploy", "--fail-level", "WARNING").returncode == 0

    assert run.stack.status()["production"] is True
    state = json.loads((run.stack.run_dir / "stack.json").read_text())
    (web,) = [s for s in state["services"] if s["name"] == "web"]
    assert web["argv"][1:4] == ["-m", "gunicorn", "dashboard.wsgi"]
    children = Path(f"/proc/{web['pid']}/task/{web['pid']}/children").read_text().split()
    assert len(children) == GUNICORN_WORKERS  # the master and its workers are running

    client = Proxied(run.web)
    # Plain HTTP, no proxy: redirected to HTTPS, as the production settings say.
    status, headers, _ = client.get("/api/v1/", proxied=False)
    assert status == 301 and headers["Location"].startswith("https://"), (status, headers)
    status, _, _ = client.get("/health/", proxied=False)  # the exemption orchestrators use
    assert status == 200
    status, headers, _ = client.get("/accounts/login/")
    assert status == 200
    assert "max-age=31536000" in headers["Strict-Transport-Security"]
    assert headers["X-Frame-Options"] == "DENY"
    assert "Secure" in headers["Set-Cookie"] and "csrftoken" in headers["Set-Cookie"]


def test_a_user_with_a_role_logs_in_and_sees_every_page(run: ProductionRun, token: str) -> None:
    created = run.manage("lagwatch_user", "--role", "viewer", USERNAME, "--create")
    first, password = created.stdout.strip().splitlines()[-2:]
    assert first == f"{USERNAME}: viewer"
    client = Proxied(run.web)
    assert client.get("/")[0] == 302  # no session yet: to the login page
    client.login(USERNAME, password)

    groups = wait_for(lambda: _groups(run, token), 120, "the first collected groups", 2)
    group = next((g for g in groups if g["name"] == SPOUT), groups[0])
    auth = {"Authorization": f"Bearer {token}"}
    status, _, body = client.get(f"/api/v1/partitions/?group_id={group['id']}", headers=auth)
    assert status == 200, body[:500]
    partition = json.loads(body)["results"][0]

    # Each page: its title, and what it shows of the running stack.
    name, topic = group["name"], partition["topic"]
    pages = {
        "/": ("Overview", "Groups by status"),
        "/groups/": ("Groups", SPOUT),
        f"/groups/{group['id']}/": (f"{name} · Groups", f'<h1 class="group-name">{name}</h1>'),
        f"/partitions/{partition['id']}/": (
            f"{topic}/{partition['partition']} · {name}",
            f'<span class="topic">{topic}</span>',
        ),
        "/sources/": ("Sources", "Source health"),
        "/jobs/": ("Spark jobs", "Spark jobs"),
        "/producers/": ("Producers", "Producers"),
        "/clusters/lab/": ("lab", "Cluster lab"),
        "/alerts/": ("Alerts", "Alerts"),
        "/alerts/rules/": ("Alert rules", "Stuck partition (default)"),
        "/alerts/channels/": ("Alert channels", "Alert channels"),
        "/alerts/silences/": ("Silences", "Silences"),
        "/reports/": ("Reports", "Lag reports"),
        "/admin/": ("Site administration", "Site administration"),
    }
    for path, (title, shown) in pages.items():
        status, headers, body = client.get(path)
        assert status == 200, (path, status, body[-1000:])
        assert headers.get_content_type() == "text/html", path
        text = body.decode()
        assert re.search(rf"<title>{re.escape(title)} [|·]", text), (path, title)
        assert shown in text, (path, shown)
        assert "No data yet" not in text and "Traceback" not in text, path

    # Static files come from collectstatic's manifest (hashed names), served by WhiteNoise.
    overview = client.get("/")[2].decode()
    assets = re.findall(r'(?:href|src)="(/static/[^"]+\.[0-9a-f]{12}\.(?:css|js))"', overview)
    assert assets, "no hashed static file on the overview"
    for asset in assets:
        assert client.get(asset)[0] == 200, asset
    # A viewer may not change rules: the role holds under gunicorn too.
    assert client.get("/alerts/rules/new/")[0] == 403


def test_api_with_a_token_v3_and_metrics(run: ProductionRun, token: str) -> None:
    client = Proxied(run.web)
    groups = wait_for(lambda: _groups(run, token), 120, "the first collected groups", 2)
    assert SPOUT in {g["name"] for g in groups}
    status, _, body = client.get("/api/v1/groups/")
    assert status == 401, body[:300]
    status, _, _ = client.get("/api/v1/groups/", headers={"Authorization": "Bearer not-a-token"})
    assert status == 401
    status, _, body = client.get(
        "/api/v1/clusters/lab/", headers={"Authorization": f"Bearer {token}"}
    )
    assert status == 200 and json.loads(body)["name"] == "lab", body[:300]

    status, _, body = client.get("/v3/kafka")
    assert status == 200 and json.loads(body)["clusters"] == ["lab"], body[:300]
    status, _, body = client.get("/v3/kafka/lab/consumer")
    assert status == 200 and json.loads(body)["consumers"], body[:300]

    status, headers, body = client.get("/metrics")
    assert status == 200 and headers.get_content_type() == "text/plain", headers
    assert re.search(rb'^lagwatch_partition_lag\{cluster="lab",', body, re.M), body[:500]

    def from_the_published_exposition() -> str | None:
        """A scrape as Prometheus makes it (gzip), served from the set the worker built after
        a stored cycle (its age above 0; a scrape that builds inline reports 0)."""
        status, headers, body = client.get("/metrics", headers={"Accept-Encoding": "gzip"})
        if status != 200 or headers.get("Content-Encoding") != "gzip":
            return None
        text = gzip.decompress(body).decode()
        age = re.search(r"^lagwatch_metrics_exposition_age_seconds (\S+)$", text, re.M)
        return text if age and float(age.group(1)) > 0 else None

    text = wait_for(from_the_published_exposition, 120, "/metrics from a published set", 2)
    assert re.search(r'^lagwatch_partition_lag\{cluster="lab",', text, re.M), text[:500]


def test_ingest_with_the_token_and_refused_without(run: ProductionRun) -> None:
    client = Proxied(run.web)
    url = "/api/v1/ingest/lab/librdkafka"
    doc = producer_doc()
    doc.update(name="smoke-producer#producer-1", client_id="smoke-producer", time=int(time.time()))
    body = json.dumps(doc).encode()
    json_type = {"Content-Type": "application/json"}
    assert client.request("POST", url, body, json_type)[0] == 401
    wrong = {**json_type, "Authorization": "Bearer wrong"}
    assert client.request("POST", url, body, wrong)[0] == 403
    token = run.env["LAGWATCH_INGEST_TOKEN"]
    good = {**json_type, "Authorization": f"Bearer {token}"}
    status, _, answer = client.request("POST", url, body, good)
    assert status == 202, answer[:500]
    shell = "from dashboard.monitoring.models import ClientReportRow as R; " \
        "print(R.objects.filter(key__contains='/smoke-producer#producer-1@').count())"  # fmt: skip
    assert run.shell(shell) == "1"
    # The workload's own clients push through the same front (X-Forwarded-Proto) all along.
    status = json.loads(urllib.request.urlopen(run.control + "/lab/status", timeout=10).read())
    assert status["ingest"]["posted"] > 0 and status["spout_ingest"]["posted"] > 0


def test_one_alert_is_delivered_to_a_webhook(run: ProductionRun, armed: Armed) -> None:
    hook = armed.hook
    wait_for_verdict(
        lambda: [b for b in hook.bodies("firing") if b["alert"]["rule"] == RULE],
        FIRE_TIMEOUT_S, "the webhook's firing notice", StatusRuns(run.stack.run_dir / "data"),
    )  # fmt: skip
    print(f"firing webhook {time.time() - armed.poisoned_at:.0f} s after the poison", flush=True)
    (notice,) = [b for b in hook.bodies("firing") if b["alert"]["rule"] == RULE]
    alert = notice["alert"]
    assert (alert["cluster"], alert["group"], alert["topic"], alert["partition"]) == (
        "lab", SPOUT, "orders", 0,
    )  # fmt: skip
    assert alert["status"] == "STALL", alert
    # The diagnosis is the verdict's at the firing evaluation: the spout's failed-tuple
    # evidence (its pushed counts) may reach the sample log a run later under load (a
    # fresh-clone run fired with none). The alert row is refreshed at every evaluation.
    if "POISON_MESSAGE" not in alert["diagnosis"]:
        code = (
            "from dashboard.alerts.models import Alert; "
            f"print(Alert.objects.get(id={alert['id']}).diagnosis)"
        )
        wait_for(lambda: "POISON_MESSAGE" in run.shell(code), FIRE_TIMEOUT_S,
                 "POISON_MESSAGE in the alert's diagnosis", 5)  # fmt: skip
    (request,) = [r for r in hook.requests if r["body"]["alert"]["rule"] == RULE]
    assert request["path"] == urllib.parse.urlsplit(hook.url).path
    assert request["at"] >= armed.poisoned_at


# --- outages under the running stack (last: they would delay the alert) ------------------------

REDIS_OUTAGE_S = 15
POSTGRES_OUTAGE_S = 20
STACK_SERVICES = ("beat", "worker", "collector", "web")

Cycles = dict[str, tuple[datetime, bool]]


def cycles(url: str) -> Cycles:
    """The lab cluster's sources: when a cycle last tried each, and whether it answered."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT h.source, h.last_attempt_at, h.reachable FROM monitoring_sourcehealth h "
                "JOIN monitoring_cluster c ON c.id = h.cluster_id "
                "WHERE c.name = %s AND h.last_attempt_at IS NOT NULL",
                (LAB_CLUSTER,),
            ).fetchall()
    except psycopg.Error:  # the server is down
        return {}
    return {source: (at, bool(ok)) for source, at, ok in rows}


def later_than(url: str, before: Cycles) -> Cycles | None:
    """The sources' latest cycle, once every source has one stored after ``before``."""
    now = cycles(url)
    if set(now) >= {"kafka", "zookeeper"} and all(
        now[s][0] > before[s][0] for s in before if s in now
    ):
        return now
    return None


def health(run: ProductionRun) -> int:
    status, _, _ = Proxied(run.web).get("/health/", proxied=False)
    return status


def still_running(run: ProductionRun, seconds: float) -> None:
    """For ``seconds``, every Lagwatch process keeps running: none may die of the outage."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        services = run.stack.status()["services"]
        for name in STACK_SERVICES:
            assert services[name]["state"] == "running", (name, services[name])
        time.sleep(1)


def all_running(run: ProductionRun) -> None:
    services = run.stack.status()["services"]
    assert {n: s["state"] for n, s in services.items() if s["state"] != "running"} == {}


def test_collection_resumes_after_redis_stopped_under_beat(run: ProductionRun) -> None:
    """Redis is Celery's broker and holds the collection locks: while it is down nothing can be
    sent or taken; once it is back (empty) cycles are stored again on schedule."""
    url = stack_database_url(run.stack.run_dir, run.endpoints["postgres"])
    first = wait_for(lambda: later_than(url, {}), 60, "a cycle stored")
    running = wait_for(lambda: later_than(url, first), 60, "the cycle after it")
    assert all(ok for _, ok in running.values()), running

    run.stack.stop_service("redis")
    try:
        still_running(run, REDIS_OUTAGE_S)
        during = cycles(url)
        # Collection did pause: at most the cycle in flight when Redis went was stored since.
        interval = timedelta(seconds=POLL_S)
        assert all(during[s][0] <= running[s][0] + interval for s in running), (running, during)
    finally:
        run.stack.start_service("redis")
    back = wait_for(lambda: later_than(url, during), 60, "a cycle stored after Redis came back")
    assert all(ok for _, ok in back.values()), back
    wait_for(lambda: later_than(url, back), 60, "the cycle after that")  # on schedule again
    all_running(run)


def test_collection_and_health_resume_after_postgresql_restarted(
    run: ProductionRun, token: str
) -> None:
    """A failover or an upgrade's restart: the broken persistent connections are dropped and
    replaced, not kept failing until someone restarts the processes. Meanwhile the API says
    the database does not answer (503, ``Retry-After``), not an anonymous 500."""
    url = stack_database_url(run.stack.run_dir, run.endpoints["postgres"])
    before = cycles(url)  # read once: a cycle is awaited after this moment, not after itself
    running = wait_for(lambda: later_than(url, before), 60, "a cycle stored")
    assert health(run) == 200

    run.stack.stop_service("postgres")
    try:
        wait_for(lambda: health(run) == 503, 60, "the health check reporting the database down")
        status, headers, body = Proxied(run.web).get(
            "/api/v1/groups/", headers={"Authorization": f"Bearer {token}"}
        )
        assert (status, headers.get("Retry-After")) == (503, "10"), body[:500]
        assert json.loads(body)["error"] == "database_unavailable"
        still_running(run, POSTGRES_OUTAGE_S)
    finally:
        run.stack.start_service("postgres")
    back = wait_for(lambda: later_than(url, running), 120, "a cycle stored after the restart")
    assert all(ok for _, ok in back.values()), back
    # On schedule again, not one lucky cycle: the next one comes within a few polls.
    after = wait_for(lambda: later_than(url, back), 60, "the cycle after that")
    gap = max(after[s][0] - back[s][0] for s in back)
    assert gap < timedelta(seconds=30), gap
    wait_for(lambda: health(run) == 200, 60, "the health check passing again")
    all_running(run)
