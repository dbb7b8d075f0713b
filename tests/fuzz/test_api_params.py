"""Fuzzed query strings and ids on every GET endpoint of ``/api/v1/`` (docs/API.md), with a
read token, over the API tests' small world.

Property: a 2xx, or a 4xx in the API's one error shape (``{"error": {"message", "field"}}``,
``field`` naming the parameter at fault for a 400); never a 500. Times are the likeliest
trouble: a duration or an ISO 8601 time at the edge of the calendar.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from django.test import Client
from hypothesis import event, given
from hypothesis import strategies as st

from dashboard.api.models import TokenScope
from dashboard.api.tokens import create_token
from tests.api.world import build_world

# Every GET route (a representative id where the route has one, filled in below), and the
# parameters each takes, as docs/API.md lists them.
GROUP_FILTERS = ["cluster", "source", "status", "name", "search"]
ENDPOINTS: dict[str, list[str]] = {
    "/api/v1/": [],
    "/api/v1/clusters/": ["enabled"],
    "/api/v1/clusters/{cluster}/": [],
    "/api/v1/groups/": [*GROUP_FILTERS, "stale", "ordering"],
    "/api/v1/groups/{group}/": [],
    "/api/v1/groups/{group}/history/": ["since", "until", "resolution"],
    "/api/v1/partitions/": [*GROUP_FILTERS, "group_id", "topic", "partition", "diagnosis",
                            "stale", "min_lag", "ordering"],
    "/api/v1/partitions/{partition}/": [],
    "/api/v1/partitions/{partition}/history/": ["since", "until", "resolution"],
    "/api/v1/status/": [*GROUP_FILTERS, "partitions"],
    "/api/v1/status/changes/": [*GROUP_FILTERS, "group_id", "level", "topic", "partition",
                                "since", "until"],
    "/api/v1/rebalances/": [*GROUP_FILTERS[:2], "name", "search", "group_id", "cause", "since",
                            "until"],
    "/api/v1/alerts/": ["state", "severity", "level", "cluster", "group", "topic", "since",
                        "until"],
    "/api/v1/alerts/{id}/": [],
    "/api/v1/reports/": ["status"],
    "/api/v1/reports/{id}/": [],
    "/api/v1/reports/export": ["cluster", "group", "groups", "topic", "topics", "source",
                               "sources", "since", "start", "end", "resolution", "format"],
    "/api/v1/audit/": ["object_type", "actor", "since", "until"],
}  # fmt: skip
# Asked with a write token (the audit log is for admins and write tokens); the rest with a read
# token, as a dashboard or a script would.
WRITE = {"/api/v1/audit/"}
PAGED = {"/api/v1/clusters/", "/api/v1/groups/", "/api/v1/partitions/", "/api/v1/status/",
         "/api/v1/status/changes/", "/api/v1/rebalances/", "/api/v1/alerts/",
         "/api/v1/reports/", "/api/v1/audit/"}  # fmt: skip

_offsets = st.sampled_from([timezone(timedelta(hours=h)) for h in (-14, -1, 0, 1, 14)])
_times = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59),
                      timezones=st.none() | _offsets)  # fmt: skip
values = st.one_of(
    st.from_regex(r"\s?[0-9]{1,8}\s?[smhdwy]?", fullmatch=True),  # durations, at the edges
    _times.map(lambda t: t.isoformat()),
    _times.map(lambda t: t.isoformat().replace("+00:00", "Z")),
    st.sampled_from(["OK", "stall,STOP", "kafka", "storm,zookeeper", "-total_lag", "lag",
                     "raw", "1m", "1h", "auto", "true", "no", "all", "none", "group",
                     "partition", "firing", "critical", "done", "csv", "parquet", "xlsx",
                     "POISON_MESSAGE", "prod", "billing", "invoices", "0", "-1", "1", "500",
                     "rule", "cluster", "token:fuzz-reader", "manage.py lagwatch_user", "system",
                     "9" * 30, "1e3", "", "\x00", "é", "</script>", "2026-13-01", "T"]),
    st.text(max_size=20),
)  # fmt: skip


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, list[tuple[str, str]]]:
    route = draw(st.sampled_from(sorted(ENDPOINTS)))
    names = [*ENDPOINTS[route], *(["page", "page_size"] if route in PAGED else [])]
    query = draw(st.lists(st.tuples(st.sampled_from(names) if names else st.just("x"), values),
                          max_size=4))  # fmt: skip
    if draw(st.integers(0, 9)) == 0:  # an unknown parameter
        query.append((draw(st.sampled_from(["stauts", "x", "page_sise", ""])), "1"))
    return route, query


@pytest.fixture
def api(db: None, client: Client, settings: Any, tmp_path) -> dict[str, Any]:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    settings.LAGWATCH_REPORTS_DIR = str(tmp_path / "reports")
    world = build_world()
    ids = {
        "cluster": "prod",
        "group": str(world.groups["billing"].pk),
        "partition": str(world.partitions["billing", "invoices", 1].pk),
        "id": "1",
    }
    secret = create_token("fuzz-reader", TokenScope.READ)[1]
    writer = create_token("fuzz-writer", TokenScope.WRITE)[1]
    return {"client": client, "ids": ids, "headers": {"Authorization": f"Bearer {secret}"},
            "write_headers": {"Authorization": f"Bearer {writer}"}}  # fmt: skip


def check_get(api: dict[str, Any], path: str, query: list[tuple[str, str]]) -> int:
    headers = api["write_headers"] if path in WRITE else api["headers"]
    response = api["client"].get(path, query, headers=headers)
    if response.streaming:  # an export: its errors would come while it streams
        b"".join(response.streaming_content)
    status = response.status_code
    assert status < 500, (path, query, status)
    if status >= 400:
        error = response.json()["error"]
        assert isinstance(error["message"], str) and error["message"], error
        if status == 400:  # ("field" may be "": ?=1 is an unknown parameter named "")
            assert "field" in error, (path, query, error)
            assert error["message"].startswith(f"{error['field']}: "), error
    return status


@given(call=requests())
def test_query_strings_are_answered_or_refused_never_a_500(api: dict, call: tuple) -> None:
    route, query = call
    event(f"status {check_get(api, route.format(**api['ids']), query)}")


@given(
    route=st.sampled_from([r for r in ENDPOINTS if "{" in r and "{cluster}" not in r]),
    ident=st.integers(0, 10**30).map(str) | st.sampled_from(["9223372036854775808", "01"]),
)
def test_any_id_is_found_or_a_404(api: dict, route: str, ident: str) -> None:
    path = route.format(group=ident, partition=ident, id=ident)
    assert check_get(api, path, []) in (200, 404)


# Found by the fuzzing, fixed in dashboard/api/params.py and dashboard/reports/spec.py: a time
# at the edge of the calendar overflowed (OverflowError: a 500) instead of a 400 naming it, and
# so did an integer parameter beyond 64 bits.
@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/v1/rebalances/?since=9999999w", "since"),
        ("/api/v1/alerts/?until=9999999w", "until"),
        ("/api/v1/status/changes/?since=0001-01-01T00:00:00%2B01:00", "since"),
        ("/api/v1/rebalances/?until=9999-12-31T23:59:59-01:00", "until"),
        ("/api/v1/groups/1/history/?since=9999999w", "since"),
        ("/api/v1/reports/export?cluster=prod&start=0001-01-01T00:00:00%2B01:00", "start"),
        # Found by Schemathesis: an integer beyond 64 bits reached the database driver.
        ("/api/v1/status/changes/?group_id=170231506761892517163608393106927386624", "group_id"),
        ("/api/v1/partitions/?min_lag=9223372036854775808", "min_lag"),
        ("/api/v1/rebalances/?group_id=99999999999999999999", "group_id"),
    ],
)
def test_out_of_range_values_are_a_400(api: dict, path: str, field: str) -> None:
    if "/groups/1/" in path:
        path = path.replace("/groups/1/", f"/groups/{api['ids']['group']}/")
    response = api["client"].get(path, headers=api["headers"])
    assert response.status_code == 400, response.content
    assert response.json()["error"]["field"] == field


def test_a_time_with_an_offset_is_read_in_utc(api: dict) -> None:
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=30)
    response = api["client"].get(
        f"/api/v1/groups/{api['ids']['group']}/history/",
        {"since": at.astimezone(timezone(timedelta(hours=2))).isoformat()},
        headers=api["headers"],
    )
    assert response.json()["since"] == at.isoformat().replace("+00:00", "Z")


def test_the_audit_log_is_fuzzed_with_entries_to_find(api: dict) -> None:
    """The world's changes are in the log (so a filter can match); a read token is refused."""
    client = api["client"]
    answer = client.get("/api/v1/audit/", headers=api["write_headers"]).json()
    assert answer["count"] > 0
    refused = client.get("/api/v1/audit/", headers=api["headers"])
    assert refused.status_code == 403
