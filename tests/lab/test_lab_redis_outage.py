"""Redis stopped and started again under pending alert deliveries, in the lab: the real worker
and beat, a webhook receiver in this process.

Deliveries are queued while the receiver fails (HTTP 503: each waits to retry), more while
Redis is down (their messages cannot be sent at all). Redis stays down until every retry is
due, then comes back: beat's sweep finds them due in the database and the worker sends each
exactly once (none lost, none twice), and the worker is the same process throughout (a retry
held as a countdown message once killed it in kombu's restore of unacknowledged messages).

Marked ``faults`` (scripts/test-faults): a stack of its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.stack import REPO, Stack
from tests.alerts.receivers import HookReceiver
from tests.waiting import wait_for

pytestmark = [pytest.mark.lab, pytest.mark.faults]

SERVICES = ["redis", "web", "worker", "beat"]
BEFORE, DURING = 6, 4  # deliveries queued before the outage (failing), and during it

QUEUE = """
import json, sys
from django.db import transaction
from django.utils import timezone
from dashboard.alerts.models import Alert, Channel
from dashboard.alerts.notify import queue
url, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
channel, _ = Channel.objects.get_or_create(name="outage-hook", defaults={"kind": "webhook", "url": url})
ids = []
for n in range(first, first + count):
    now = timezone.now()
    with transaction.atomic():
        alert = Alert.objects.create(
            rule_name="outage", subject_key=f"outage-{n}", level="group", cluster="lab",
            source="kafka", group=f"g{n}", severity="critical", title=f"outage {n}",
            status="STOP", started_at=now, fired_at=now,
        )
        queue(alert, "firing", [channel])
    ids.append(alert.pk)
print(json.dumps(ids))
"""

STATES = """
import json
from dashboard.alerts.due import due_deliveries
from dashboard.alerts.models import Delivery
due = {pk for pk, _ in due_deliveries()}
print(json.dumps([[d.alert_id, d.state, d.attempts, d.pk in due]
                  for d in Delivery.objects.filter(channel_name="outage-hook")]))
"""


def shell(lab: Stack, code: str, *args: str) -> object:
    """``manage.py shell`` against the stack (its database; Redis as the product finds it)."""
    script = lab.run_dir / "script.py"
    script.write_text(code)
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c",
         f"import sys; sys.argv = ['x', *{list(args)!r}]; exec(open({str(script)!r}).read())"],
        cwd=REPO, env=lab.django_env(), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def states(lab: Stack) -> list[list]:
    return shell(lab, STATES)  # type: ignore[return-value]


def sweeps(lab: Stack) -> int:
    """Beat's sweeps the worker has run (its log names each task it received)."""
    log = (lab.run_dir / "logs" / "worker.log").read_text(errors="replace")
    return log.count("send_due_deliveries")


def worker_pid(lab: Stack) -> int:
    return lab.status()["services"]["worker"]["pid"]


@pytest.fixture
def stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("LAGWATCH_ALERTS_SWEEP_S", "2")
    monkeypatch.setenv("LAGWATCH_ALERTS_RETRY_BASE_S", "3")
    monkeypatch.setenv("LAGWATCH_ALERTS_RETRY_MAX_S", "5")
    monkeypatch.setenv("LAGWATCH_ALERTS_MAX_ATTEMPTS", "50")
    # No Spark job in this stack: nothing is collected, and the worker's JVM would only load it.
    monkeypatch.setenv("LAGWATCH_STATUS_EVERY_S", "3600")
    monkeypatch.setenv("LAGWATCH_ROLLUPS_EVERY_S", "3600")
    lab = Stack(tmp_path)
    try:
        lab.up(SERVICES)
        yield lab
    finally:
        lab.down()


def test_deliveries_pending_through_a_redis_outage_arrive_once(stack: Stack) -> None:
    lab = stack
    hook = HookReceiver()
    try:
        hook.status = 503
        before = shell(lab, QUEUE, hook.url, "0", str(BEFORE))
        wait_for(
            lambda: all(s == "retrying" and n >= 1 for _, s, n, _ in states(lab)),
            120, "every delivery failed once and waits to retry",
        )  # fmt: skip
        pid = worker_pid(lab)

        lab.stop_service("redis")
        during = shell(lab, QUEUE, hook.url, str(BEFORE), str(DURING))
        hook.status = 200
        back = time.time()
        # Redis stays down until every delivery is due: the retries' waits run out, and the new
        # ones' messages never went.
        wait_for(
            lambda: all(due for *_, due in states(lab)) and len(states(lab)) == BEFORE + DURING,
            120, "every delivery due while Redis is down",
        )  # fmt: skip
        assert not [r for r in hook.requests if r["at"] >= back]  # nothing sent meanwhile
        lab.start_service("redis")

        wait_for(
            lambda: all(s == "sent" for _, s, _, _ in states(lab)),
            180, "every delivery sent after Redis came back",
        )  # fmt: skip
        alerts = set(before) | set(during)  # type: ignore[arg-type]
        sent = Counter(r["body"]["alert"]["id"] for r in hook.requests if r["at"] >= back)
        assert sent == Counter(dict.fromkeys(alerts, 1)), sent  # each once, none lost
        # Three sweeps more (and any redelivered message): nothing is sent again.
        swept = sweeps(lab)
        wait_for(lambda: sweeps(lab) >= swept + 3, 60, "three sweeps after the last send")
        assert len([r for r in hook.requests if r["at"] >= back]) == len(alerts)
        assert worker_pid(lab) == pid and lab.status()["services"]["worker"]["state"] == "running"
        log = (lab.run_dir / "logs" / "worker.log").read_text(errors="replace")
        assert "restore_unacked" not in log and "Unrecoverable error" not in log
    finally:
        hook.close()
