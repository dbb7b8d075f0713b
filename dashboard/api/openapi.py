"""The OpenAPI 3.1 document of ``/api/v1/``, served at ``/api/v1/openapi.json``.

A maintained Python structure rather than a generated one: the views are plain functions
(docs/API.md says what they take and answer), so the document is written next to them, and
kept true by tests (``tests/api/test_openapi.py``): every route of ``urls.py`` has its path
here and the reverse, the document validates against the OpenAPI 3.1 schema, and Schemathesis
runs the live API against it (every answer must match its schema). The vocabularies (statuses,
sources, orderings, formats, scopes) are read from the code that enforces them, so they cannot
drift apart.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from dashboard.alerts.models import AlertState, Level, Severity
from dashboard.api import history, pagination, params
from dashboard.api.models import TokenScope
from dashboard.api.views import groups as group_views
from dashboard.api.views import partitions as partition_views
from dashboard.api.views import status as status_views
from dashboard.monitoring.models import SourceKind, SparkJobOutcome, Status
from dashboard.reports.models import CONTENT_TYPES, ReportStatus
from dashboard.reports.spec import FORMATS

OPENAPI_VERSION = "3.1.0"
JSON = "application/json"
Schema = dict[str, Any]

# --- schema helpers ----------------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or null (JSON Schema 2020-12, as OpenAPI 3.1 uses it)."""
    if "type" in schema and "$ref" not in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return {**schema, "type": [*types, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def obj(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    """A closed object: every property listed, and required unless said otherwise (the API
    writes every key, null when unknown)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties) if required is None else required,
        "additionalProperties": False,
    }


STRING: Schema = {"type": "string"}
# ``{"<topic>": [partitions]}``, as members' assignments are published.
TOPIC_PARTITIONS: Schema = {
    "type": "object",
    "additionalProperties": {"type": "array", "items": {"type": "integer"}},
}
INTEGER: Schema = {"type": "integer"}
# An integer parameter: a 64-bit column's range (a larger one is a 400).
ID: Schema = {"type": "integer", "minimum": 1, "maximum": params.MAX_INTEGER}
COUNT: Schema = {"type": "integer", "minimum": 0, "maximum": params.MAX_INTEGER}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}
TIME: Schema = {"type": "string", "format": "date-time"}
URI: Schema = {"type": "string", "format": "uri"}
ANY_OBJECT: Schema = {"type": "object"}  # JSON kept as the source wrote it
STATUS: Schema = {"type": "string", "enum": list(Status.values)}
SOURCE: Schema = {"type": "string", "enum": list(SourceKind.values)}
COUNTS: Schema = {"type": "object", "additionalProperties": {"type": "integer"}}
ASSIGNMENT: Schema = {"type": "object", "additionalProperties": {"type": "array", "items": INTEGER}}

# --- schemas -----------------------------------------------------------------------------------

DIAGNOSIS: Schema = {
    "type": "object",
    "description": "A finding of the status evaluator (docs/EVALUATOR.md) with its evidence.",
    "properties": {"code": STRING, "evidence": ANY_OBJECT},
    "required": ["code"],
}

MEMBER_DETAIL = obj(
    {
        "member_id": nullable(STRING),
        "client_id": nullable(STRING),
        "host": nullable(STRING),
        "instance_id": nullable(STRING),
        "member_epoch": nullable(INTEGER),
        "assignment": ASSIGNMENT,
        "target_assignment": nullable(ASSIGNMENT),
    }
)

TREND = obj(
    {
        "produce_per_s": nullable(NUMBER),
        "consume_per_s": nullable(NUMBER),
        "lag_slope_per_s": nullable(NUMBER),
        "direction": {"type": ["string", "null"], "enum": ["rising", "falling", "flat", None]},
        "eta_s": nullable(NUMBER),
        "bucket_start": TIME,
        "resolution": {"type": "string", "enum": ["1m", "1h"]},
    }
)
TREND["description"] = (
    "The newest Spark rollup (docs/SPARK_JOBS.md): rates per second, lag slope, seconds to "
    "drain (null: not draining, or unknown). A group's is its newest minute, a partition's "
    "its newest hour; null when there is none within 30 min (group) or 2 h (partition)."
)
RETENTION = obj(
    {
        "seconds_left": nullable(NUMBER),
        "retention_ms": nullable(INTEGER),
        "retention_bytes": nullable(INTEGER),
        "cleanup_policy": nullable(STRING),
        "config_read_at": nullable(TIME),
    }
)
RETENTION["description"] = (
    "The retention forecast (docs/EVALUATOR.md): seconds before time-based retention may "
    "delete the oldest unconsumed message (null: no forecast: config unknown, infinite, "
    "compact-only, caught up, source down), and the topic settings it rests on (null: never "
    "read)."
)

_GROUP_PROPERTIES: dict[str, Schema] = {
    "id": INTEGER,
    "cluster": STRING,
    "source": SOURCE,
    "name": STRING,
    "status": STATUS,
    "status_since": nullable(TIME),
    "evaluated_at": nullable(TIME),
    "complete": nullable(NUMBER),
    "stale": BOOLEAN,
    "partitions": nullable(INTEGER),
    "total_lag": nullable(INTEGER),
    "max_time_lag_s": nullable(NUMBER),
    "type": {"type": ["string", "null"], "enum": ["classic", "consumer", None]},
    "state": STRING,
    "generation": nullable(INTEGER),
    "assignment_epoch": nullable(INTEGER),
    "members": INTEGER,
    "member_details": nullable({"type": "array", "items": ref("MemberDetail")}),
    "owner": STRING,
    "topology_id": STRING,
    "first_seen_at": TIME,
    "last_seen_at": TIME,
    "last_commit_at": nullable(TIME),
    "trend": nullable(ref("Trend")),
    "retention_left_s": nullable(NUMBER),
}

_PARTITION_PROPERTIES: dict[str, Schema] = {
    "id": INTEGER,
    "group_id": INTEGER,
    "cluster": STRING,
    "source": SOURCE,
    "group": STRING,
    "topic": STRING,
    "partition": INTEGER,
    "committed": nullable(INTEGER),
    "earliest": nullable(INTEGER),
    "latest": nullable(INTEGER),
    "lag": nullable(INTEGER),
    "time_lag_s": nullable(NUMBER),
    "time_lag_kind": STRING,
    "owner": STRING,
    "alive": nullable(BOOLEAN),
    "last_commit_at": nullable(TIME),
    "pending": nullable(INTEGER),
    "failed": nullable(INTEGER),
    "acked": nullable(INTEGER),
    "status": STATUS,
    "status_since": nullable(TIME),
    "diagnosis": {"type": "array", "items": ref("Diagnosis")},
    "reason": STRING,
    "complete": nullable(NUMBER),
    "evaluated_at": nullable(TIME),
    "stale": BOOLEAN,
    "sampled_at": TIME,
    "present": BOOLEAN,
    "trend": nullable(ref("Trend")),
    "retention": ref("Retention"),
}

_PARTITION_STATUS = obj(
    {
        "id": INTEGER,
        "topic": STRING,
        "partition": INTEGER,
        "status": STATUS,
        "status_since": nullable(TIME),
        "diagnosis": {"type": "array", "items": ref("Diagnosis")},
        "reason": STRING,
        "complete": nullable(NUMBER),
        "lag": nullable(INTEGER),
        "time_lag_s": nullable(NUMBER),
        "stale": BOOLEAN,
        "evaluated_at": nullable(TIME),
    }
)

_CLUSTER_PROPERTIES: dict[str, Schema] = {
    "name": STRING,
    "enabled": BOOLEAN,
    "poll_interval_s": INTEGER,
    "sources": obj(
        {
            "kafka": BOOLEAN,
            "zookeeper_consumers": BOOLEAN,
            "storm_spout_roots": {"type": "array", "items": STRING},
            "storm_ui": BOOLEAN,
            "consumer_offsets_topic": BOOLEAN,
        }
    ),
    "groups_by_status": {
        **COUNTS,
        "description": "Groups per status; statuses with none are left out.",
    },
    "updated_at": TIME,
}

_ALERT_PROPERTIES: dict[str, Schema] = {
    "id": INTEGER,
    "rule": STRING,
    "level": {"type": "string", "enum": list(Level.values)},
    "cluster": STRING,
    "source": STRING,
    "group": STRING,
    "topic": nullable(STRING),
    "partition": nullable(INTEGER),
    "state": {"type": "string", "enum": list(AlertState.values)},
    "severity": {"type": "string", "enum": list(Severity.values)},
    "title": STRING,
    "status": STRING,
    "diagnosis": {"type": "array", "items": ref("Diagnosis")},
    "reason": STRING,
    "lag": nullable(INTEGER),
    "time_lag_s": nullable(NUMBER),
    "started_at": TIME,
    "fired_at": TIME,
    "acknowledged_at": nullable(TIME),
    "acknowledged_by": STRING,
    "resolved_at": nullable(TIME),
    "resolved_reason": STRING,
    "silenced": BOOLEAN,
}

_REPORT_STATUS: Schema = {"type": "string", "enum": list(ReportStatus.values)}
_FORMAT: Schema = {"type": "string", "enum": list(FORMATS)}

_HISTORY_POINT = obj(
    {
        "time": TIME,
        **{
            name: nullable(NUMBER)
            for name in (
                "committed",
                "latest",
                "lag",
                "time_lag_s",
                "pending",
                "failed",
                "acked",
                "max_time_lag_s",
                "partitions",
                *history.ROLLUP_FIELDS,
            )
        },
        "stale": BOOLEAN,
    },
    required=["time"],
)
_HISTORY_POINT["description"] = (
    "One point of the series: raw samples of a partition (committed, latest, lag, time_lag_s, "
    "pending, failed, acked, stale), of a group (lag, max_time_lag_s, partitions, stale), or "
    f"rollups ({', '.join(history.ROLLUP_FIELDS)})."
)
_HISTORY_PROPERTIES: dict[str, Schema] = {
    "since": TIME,
    "until": TIME,
    "resolution": {"type": "string", "enum": [r for r in history.RESOLUTIONS if r != "auto"]},
    "source": {"type": "string", "description": "raw samples, or <resolution> rollups"},
    "count": INTEGER,
    "points": {"type": "array", "items": ref("HistoryPoint")},
}

_PATTERNS: Schema = {
    "description": "Names or shell-style patterns (*, ?, [...]): a string or a list.",
    "anyOf": [STRING, {"type": "array", "items": STRING}],
}


def _page(item: Schema, extra: dict[str, Schema] | None = None) -> Schema:
    return obj(
        {
            "count": {"type": "integer", "minimum": 0},
            "page": {"type": "integer", "minimum": 1},
            "page_size": {"type": "integer", "minimum": 1, "maximum": pagination.MAX_PAGE_SIZE},
            "pages": {"type": "integer", "minimum": 1},
            "next": {
                **nullable(URI),
                "description": "The next page, other parameters kept; null on the last.",
            },
            "previous": nullable(URI),
            **(extra or {}),
            "results": {"type": "array", "items": item},
        }
    )


SCHEMAS: dict[str, Schema] = {
    "Error": {
        **obj(
            {
                "error": obj(
                    {
                        "message": {
                            "type": "string",
                            "description": "What is wrong; starts with the "
                            "parameter or field at fault when there is one.",
                        },
                        "field": {
                            "type": "string",
                            "description": "The parameter or body field at fault.",
                        },
                    },
                    required=["message"],
                )
            }
        ),
        "example": {
            "error": {
                "message": "status: 'BROKEN' is not one of UNKNOWN, OK, WARN, "
                "STALL, STOP, REWIND, ERR",
                "field": "status",
            }
        },
    },
    "Index": obj(
        {
            "version": {"const": "v1"},
            "endpoints": {"type": "object", "additionalProperties": URI},
            "you": obj(
                {
                    "actor": STRING,
                    "scope": {"type": "string", "enum": [*TokenScope.values, "session"]},
                    "role": {"type": "string", "enum": ["viewer", "operator", "admin"]},
                }
            ),
            "docs": STRING,
        }
    ),
    "Diagnosis": DIAGNOSIS,
    "Cluster": obj(_CLUSTER_PROPERTIES),
    "ClusterDetail": obj(
        {
            **_CLUSTER_PROPERTIES,
            "source_health": {
                "type": "array",
                "items": obj(
                    {
                        "source": STRING,
                        "reachable": BOOLEAN,
                        "last_attempt_at": nullable(TIME),
                        "last_success_at": nullable(TIME),
                        "last_error_at": nullable(TIME),
                        "last_error": STRING,
                        "last_duration_s": nullable(NUMBER),
                        "consecutive_failures": INTEGER,
                    }
                ),
            },
            "collection_errors": {
                "type": "array",
                "items": obj({"source": STRING, "where": STRING, "error": STRING, "at": TIME}),
            },
            "brokers": {
                "type": "array",
                "description": "Each broker's delayed operations (purgatory), as its metrics "
                "endpoint (broker_metrics_urls) last said. error set: the latest scrape "
                "failed and the figures are those of as_of.",
                "items": obj(
                    {
                        "broker": {**STRING, "description": "The endpoint's host:port."},
                        "url": STRING,
                        "fetch_purgatory": {
                            **nullable(INTEGER),
                            "description": "Delayed fetches waiting now (NumDelayedOperations).",
                        },
                        "produce_purgatory": nullable(INTEGER),
                        "fetch_watched": {
                            **nullable(INTEGER),
                            "description": "Kafka's PurgatorySize: watcher entries, completed "
                            "operations included until the next purge.",
                        },
                        "produce_watched": nullable(INTEGER),
                        "fetch_expirations_per_s": nullable(NUMBER),
                        "produce_expirations_per_s": nullable(NUMBER),
                        "as_of": nullable(TIME),
                        "checked_at": nullable(TIME),
                        "error": nullable(STRING),
                    }
                ),
            },
        }
    ),
    "MemberDetail": MEMBER_DETAIL,
    "Trend": TREND,
    "Retention": RETENTION,
    "Group": obj(_GROUP_PROPERTIES),
    "GroupDetail": obj(
        {
            **_GROUP_PROPERTIES,
            "assignor": STRING,
            "coordinator": STRING,
            "members_known": BOOLEAN,
            "member_list": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"member_id": {}, "client_id": {}, "host": {}, "assignment": {}},
                    "description": "Members as stored (kept for existing clients; "
                    "member_details is the fuller form).",
                },
            },
            "partition_list": {"type": "array", "items": ref("Partition")},
            "balance": ref("Balance"),
            "what_if": nullable({"type": "array", "items": ref("WhatIfEntry")}),
            "what_if_subscriptions": nullable(
                {"type": "string", "enum": ["reported", "inferred", "partly reported"]}
            ),
            "spouts": {
                "type": "array",
                "items": ref("SpoutFigures"),
                "description": "A Storm spout group: the latest figures of its topology's "
                "spouts (Storm UI and the spout's push); empty for other groups.",
            },
        }
    ),
    "SpoutFigures": obj(
        {
            "topology_id": STRING,
            "spout_id": STRING,
            "at": TIME,
            "emitted": nullable(INTEGER),
            "acked": nullable(INTEGER),
            "failed": nullable(INTEGER),
            "complete_latency_ms": nullable(NUMBER),
            "pending": nullable(INTEGER),
            "max_spout_pending": nullable(INTEGER),
        }
    ),
    "Balance": obj(
        {
            "members": {
                "type": "array",
                "items": obj(
                    {
                        "member_id": STRING,
                        "partitions": INTEGER,
                        "lag": nullable(INTEGER),
                        "time_lag_s": nullable(NUMBER),
                        "lag_share": nullable(NUMBER),
                    }
                ),
            },
            "unowned": obj({"partitions": INTEGER, "lag": nullable(INTEGER)}),
            "total_lag": nullable(INTEGER),
            "partitions_max": nullable(INTEGER),
            "partitions_mean": nullable(NUMBER),
            "partitions_imbalance": nullable(NUMBER),
            "busiest_member": nullable(STRING),
            "busiest_lag_share": nullable(NUMBER),
        }
    ),
    "WhatIfEntry": obj(
        {
            "assignor": STRING,
            "protocol": {"type": "string", "enum": ["classic", "consumer"]},
            "members": nullable(
                {
                    "type": "array",
                    "items": obj(
                        {"member_id": STRING, "partitions": INTEGER, "assignment": TOPIC_PARTITIONS}
                    ),
                }
            ),
            "moved": nullable(INTEGER),
            "unowned_assigned": nullable(INTEGER),
            "note": nullable(STRING),
        }
    ),
    "WhatIf": obj(
        {
            "group": STRING,
            "cluster": STRING,
            "source": SOURCE,
            "type": nullable({"type": "string", "enum": ["classic", "consumer"]}),
            "members": {
                "type": "array",
                "items": obj(
                    {
                        "member_id": STRING,
                        "client_id": nullable(STRING),
                        "partitions": TOPIC_PARTITIONS,
                        "lag": nullable(INTEGER),
                        "time_lag_s": nullable(NUMBER),
                    }
                ),
            },
            "imbalance": nullable(NUMBER),
            "busiest_member": nullable(STRING),
            "busiest_lag_share": nullable(NUMBER),
            "unowned": obj({"partitions": INTEGER, "lag": nullable(INTEGER)}),
            "subscriptions": nullable(
                {"type": "string", "enum": ["reported", "inferred", "partly reported"]}
            ),
            "assignors": {
                "type": "object",
                "description": "By assignor: range, roundrobin, sticky; uniform and "
                "server-range for KIP-848 groups.",
                "additionalProperties": obj(
                    {
                        "assignment": nullable(
                            {"type": "object", "additionalProperties": TOPIC_PARTITIONS}
                        ),
                        "moves": nullable(INTEGER),
                        "unowned_assigned": nullable(INTEGER),
                        "note": nullable(STRING),
                    }
                ),
            },
        }
    ),
    "Partition": obj(_PARTITION_PROPERTIES),
    "StatusGroup": obj(
        {**_GROUP_PROPERTIES, "partition_statuses": {"type": "array", "items": _PARTITION_STATUS}},
        required=list(_GROUP_PROPERTIES),
    ),
    "StatusChange": obj(
        {
            "id": INTEGER,
            "group_id": INTEGER,
            "cluster": STRING,
            "source": SOURCE,
            "group": STRING,
            "topic": nullable(STRING),
            "partition": nullable(INTEGER),
            "level": {"type": "string", "enum": ["group", "partition"]},
            "at": TIME,
            "old_status": STATUS,
            "new_status": STATUS,
            "diagnosis": {"type": "array", "items": ref("Diagnosis")},
            "reason": STRING,
        }
    ),
    "Rebalance": obj(
        {
            "id": INTEGER,
            "group_id": INTEGER,
            "cluster": STRING,
            "source": SOURCE,
            "group": STRING,
            "at": TIME,
            "generation": nullable(INTEGER),
            "cause": STRING,
            "detail": {"description": "Evidence of the cause (members joined and left, ...)."},
        }
    ),
    "SparkJobRun": obj(
        {
            "id": INTEGER,
            "job": STRING,
            "started_at": TIME,
            "finished_at": nullable(TIME),
            "duration_s": nullable(NUMBER),
            "window_s": INTEGER,
            "as_of_ms": nullable(INTEGER),
            "input_rows": nullable(INTEGER),
            "output_rows": nullable(INTEGER),
            "outcome": {"type": "string", "enum": list(SparkJobOutcome.values)},
            "error": STRING,
            "output_path": STRING,
        }
    ),
    "Alert": obj(_ALERT_PROPERTIES),
    "AlertDetail": obj(
        {
            **_ALERT_PROPERTIES,
            "details": ANY_OBJECT,
            "events": {
                "type": "array",
                "items": obj({"at": TIME, "kind": STRING, "actor": STRING, "message": STRING}),
            },
        }
    ),
    "Report": obj(
        {
            "id": INTEGER,
            "status": _REPORT_STATUS,
            "progress": {"type": "number", "minimum": 0, "maximum": 1},
            "rows": INTEGER,
            "error": STRING,
            "fmt": STRING,
            "created_at": nullable(TIME),
            "finished_at": nullable(TIME),
            "size_bytes": nullable(INTEGER),
            "downloadable": BOOLEAN,
            "format": _FORMAT,
            "description": STRING,
            "requested_by": STRING,
            "spec": {
                **ANY_OBJECT,
                "description": "What the report covers (cluster, groups, "
                "topics, sources, start, end, resolution).",
            },
            "started_at": nullable(TIME),
            "expired": BOOLEAN,
            "url": URI,
            "download_url": nullable(URI),
        }
    ),
    "ReportRequest": {
        **obj(
            {
                "cluster": {"type": "string", "maxLength": 100},
                "groups": _PATTERNS,
                "group": _PATTERNS,
                "topics": _PATTERNS,
                "topic": _PATTERNS,
                "sources": _PATTERNS,
                "source": _PATTERNS,
                "since": {"type": "string", "description": "A duration before end (24h, 90m, 7d)."},
                "start": TIME,
                "end": TIME,
                "resolution": {"type": "string", "description": "raw, or a bucket: 1m, 5m, 1h, 1d"},
                "format": {**_FORMAT, "default": "csv"},
            },
            required=["cluster"],
        ),
        "example": {
            "cluster": "prod",
            "groups": ["billing-*"],
            "since": "24h",
            "resolution": "1m",
            "format": "parquet",
        },
    },
    "HistoryPoint": _HISTORY_POINT,
    "PartitionHistory": obj(
        {
            "partition": obj(
                {
                    "id": INTEGER,
                    "group_id": INTEGER,
                    "cluster": STRING,
                    "source": SOURCE,
                    "group": STRING,
                    "topic": STRING,
                    "partition": INTEGER,
                }
            ),
            **_HISTORY_PROPERTIES,
        }
    ),
    "GroupHistory": obj(
        {
            "group": obj({"id": INTEGER, "cluster": STRING, "source": SOURCE, "name": STRING}),
            **_HISTORY_PROPERTIES,
        }
    ),
    "ClusterPage": _page(ref("Cluster")),
    "GroupPage": _page(ref("Group")),
    "PartitionPage": _page(ref("Partition")),
    "StatusPage": {
        **_page(
            ref("StatusGroup"),
            {
                "summary": obj(
                    {
                        "groups": COUNTS,
                        "partitions": COUNTS,
                        "last_status_run": nullable(ref("SparkJobRun")),
                    }
                )
            },
        ),
        "description": "A page of groups, worst first, with the summary of all the filtered "
        "groups and the time of the answer.",
    },
    "StatusChangePage": _page(ref("StatusChange")),
    "RebalancePage": _page(ref("Rebalance")),
    "ProducerTopic": {
        **obj(
            {
                "cluster": STRING,
                "client_id": STRING,
                "name": STRING,
                "host": nullable(STRING),
                "topic": STRING,
                "queued": nullable(INTEGER),
                "in_flight": nullable(INTEGER),
                "delivered": nullable(INTEGER),
                "failed": nullable(INTEGER),
                "expired": nullable(INTEGER),
                "failed_by_reason": COUNTS,
                "restarts": INTEGER,
                "last_expired_at": nullable(TIME),
                "as_of": TIME,
                "partitions": {
                    "type": "array",
                    "items": obj(
                        {
                            "partition": {"type": "integer", "minimum": -1},
                            "queued": nullable(INTEGER),
                            "in_flight": nullable(INTEGER),
                            "delivered": nullable(INTEGER),
                            "failed": nullable(INTEGER),
                            "expired": nullable(INTEGER),
                        }
                    ),
                },
            }
        ),
        "description": "One producer client's figures for one topic: queued and in flight "
        "from its librdkafka statistics; delivered, failed (other than expiry) and expired "
        "(_MSG_TIMED_OUT) from its delivery-report counts, null when it pushes none "
        "(docs/INGEST.md). Counts are summed over the client's restarts. `partitions`: the same "
        "per partition where known (-1: failed before the partitioner placed the record).",
    },
    "ProducerExpiry": obj(
        {
            "cluster": STRING,
            "topic": STRING,
            "diagnosis": {"type": "string", "enum": ["PRODUCER_EXPIRY"]},
            "expired": INTEGER,
            "reason": STRING,
        }
    ),
    "Producers": obj(
        {
            "producers": {"type": "array", "items": ref("ProducerTopic")},
            "producer_expiry": {"type": "array", "items": ref("ProducerExpiry")},
        }
    ),
    "AlertPage": _page(ref("Alert")),
    "ReportPage": _page(ref("Report")),
}
SCHEMAS["StatusPage"]["properties"]["as_of"] = TIME
SCHEMAS["StatusPage"]["required"].append("as_of")

# --- parameters --------------------------------------------------------------------------------

_DURATION_OR_TIME = (
    "A duration before now (90s, 15m, 6h, 7d, 2w) or an ISO 8601 date-time (UTC when it has no "
    "offset)."
)


def query(name: str, schema: Schema, description: str = "", **extra: Any) -> Schema:
    param = {"name": name, "in": "query", "required": False, "schema": schema}
    param.update(extra)
    if description:
        param["description"] = description
    return param


def several(name: str, values: list[str], description: str) -> Schema:
    """A filter taking several values: repeated, or comma-separated in one."""
    return query(
        name,
        {"type": "array", "items": {"type": "string", "enum": values}},
        f"{description} Several allowed: repeated, or comma-separated.",
        style="form",
        explode=True,
    )


def path_param(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": schema,
        "description": description,
    }


_TEXT: Schema = {"type": "string", "maxLength": 255}
PARAMETERS: dict[str, Schema] = {
    "page": query(
        "page",
        {**ID, "default": 1},
        "Page number, from 1; a page past the last is a 400.",
    ),
    "page_size": query(
        "page_size",
        {
            "type": "integer",
            "minimum": 1,
            "maximum": pagination.MAX_PAGE_SIZE,
            "default": pagination.DEFAULT_PAGE_SIZE,
        },
    ),
    "cluster": query("cluster", _TEXT, "Cluster name (exact)."),
    "source": several("source", list(SourceKind.values), "Source of the group."),
    "status": several("status", list(Status.values), "Status (case-insensitive)."),
    "name": query("name", _TEXT, "Group name (exact)."),
    "search": query("search", _TEXT, "Substring of the group name (case-insensitive)."),
    "stale": query("stale", BOOLEAN, "true: only what comes from an unreachable source."),
    "group_id": query("group_id", ID),
    "topic": query("topic", _TEXT),
    "partition": query("partition", COUNT),
    "since": query("since", STRING, _DURATION_OR_TIME),
    "until": query("until", STRING, _DURATION_OR_TIME),
    "resolution": query(
        "resolution", {"type": "string", "enum": list(history.RESOLUTIONS), "default": "auto"}
    ),
    "group_id_path": path_param("group_id", {"type": "integer", "minimum": 0}, "Group id."),
    "partition_id_path": path_param(
        "partition_id", {"type": "integer", "minimum": 0}, "Partition id."
    ),
    "alert_id_path": path_param("alert_id", {"type": "integer", "minimum": 0}, "Alert id."),
    "report_id_path": path_param("report_id", {"type": "integer", "minimum": 0}, "Report id."),
}


def p(*names: str) -> list[Schema]:
    return [{"$ref": f"#/components/parameters/{name}"} for name in names]


PAGE = ("page", "page_size")
GROUP_FILTERS = ("cluster", "source", "status", "name", "search")

# --- responses ---------------------------------------------------------------------------------

_ERROR_CONTENT = {JSON: {"schema": ref("Error")}}
RESPONSES: dict[str, Schema] = {
    "BadRequest": {
        "description": "A parameter or field is wrong, unknown, or given twice (field names it).",
        "content": _ERROR_CONTENT,
    },
    "Unauthorized": {
        "description": "No token (and no session), another scheme, or an unknown or revoked token.",
        "headers": {
            "WWW-Authenticate": {
                "schema": STRING,
                "description": 'Bearer realm="lagwatch"[, error=...]',
            }
        },
        "content": _ERROR_CONTENT,
    },
    "Forbidden": {
        "description": "A read token (or a session without the CSRF token) writing.",
        "content": _ERROR_CONTENT,
    },
    "NotFound": {"description": "No such object.", "content": _ERROR_CONTENT},
}


def ok(schema: Schema, description: str = "OK") -> Schema:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def answers(success: dict[str, Schema], *errors: str) -> dict[str, Schema]:
    codes = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound"}
    out = dict(success)
    for code in errors:
        if code in codes:
            out[code] = {"$ref": f"#/components/responses/{codes[code]}"}
        else:
            out[code] = {"description": errors_text[code], "content": _ERROR_CONTENT}
    return out


errors_text = {
    "409": "The object is not in a state that allows it.",
    "410": "Gone: the report's file has expired.",
}


def get(
    operation_id: str,
    summary: str,
    params: list[Schema],
    response: dict[str, Schema],
    *errors: str,
    description: str = "",
) -> Schema:
    op = {
        "operationId": operation_id,
        "summary": summary,
        "parameters": params,
        "responses": answers(response, "401", *errors),
    }
    if description:
        op["description"] = description
    return op


_BINARY = {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}
# A JSON report: one array of row objects, columns in order (docs/REPORTS.md).
_REPORT_ROW = obj(
    {
        "time": TIME,
        "cluster": STRING,
        "source": STRING,
        "group": STRING,
        "topic": STRING,
        "partition": INTEGER,
        "committed": nullable(INTEGER),
        "latest": nullable(INTEGER),
        "lag": nullable(INTEGER),
        "time_lag_s": nullable(NUMBER),
        "status": STATUS,
    }
)
_REPORT_FILE = {
    "description": "The report's bytes (Content-Disposition: attachment), in its format.",
    "content": {
        CONTENT_TYPES[fmt].split(";")[0]: (
            {"schema": {"type": "array", "items": _REPORT_ROW}} if fmt == "json" else _BINARY
        )
        for fmt in FORMATS
    },
}

PATHS: dict[str, Schema] = {
    "/": {
        "get": get("index", "What the API offers, and who you are", [], {"200": ok(ref("Index"))})
    },
    "/openapi.json": {
        "get": get(
            "openapi",
            "This document",
            [],
            {
                "200": {
                    "description": "The OpenAPI 3.1 document of /api/v1/.",
                    "content": {JSON: {"schema": ANY_OBJECT}},
                }
            },
        )
    },
    "/clusters/": {
        "get": get(
            "listClusters",
            "The monitored clusters",
            [*p(*PAGE), query("enabled", BOOLEAN)],
            {"200": ok(ref("ClusterPage"))},
            "400",
        )
    },
    "/clusters/{name}/": {
        "get": get(
            "getCluster",
            "One cluster, with source health, the latest collection errors and its brokers' "
            "purgatory figures",
            [path_param("name", STRING, "Cluster name.")],
            {"200": ok(ref("ClusterDetail"))},
            "400",
            "404",
        )
    },
    "/groups/": {
        "get": get(
            "listGroups",
            "Kafka groups, ZooKeeper-based consumers and Storm spouts",
            [
                *p(*GROUP_FILTERS, "stale", *PAGE),
                query(
                    "ordering",
                    {"type": "string", "enum": list(group_views.ORDER_CHOICES), "default": "name"},
                    "Sort key; - before it for descending.",
                ),
            ],
            {"200": ok(ref("GroupPage"))},
            "400",
        )
    },
    "/groups/{group_id}/": {
        "get": get(
            "getGroup",
            "One group, with its members and partitions",
            p("group_id_path"),
            {"200": ok(ref("GroupDetail"))},
            "400",
            "404",
        )
    },
    "/groups/{group_id}/whatif/": {
        "get": get(
            "groupWhatIf",
            "What Kafka's assignors would assign the group's members now, and the moves",
            p("group_id_path"),
            {"200": ok(ref("WhatIf"))},
            "400",
            "404",
            description="The document manage.py assignment_whatif --json prints.",
        )
    },
    "/groups/{group_id}/history/": {
        "get": get(
            "groupHistory",
            "A group's lag history (one series, not paginated)",
            p("group_id_path", "since", "until", "resolution"),
            {"200": ok(ref("GroupHistory"))},
            "400",
            "404",
            description="since defaults to 1 h ago, until to now; auto picks raw "
            "samples, 1m or 1h rollups, the finest that covers the range.",
        )
    },
    "/partitions/": {
        "get": get(
            "listPartitions",
            "Every partition of every group, with its latest figures",
            [
                *p(*GROUP_FILTERS, "group_id", "topic", "partition", "stale", *PAGE),
                query(
                    "diagnosis",
                    {"type": "string", "maxLength": 64},
                    "A diagnosis code (POISON_MESSAGE, ...): partitions whose diagnosis has it.",
                ),
                query("min_lag", COUNT),
                query(
                    "ordering",
                    {
                        "type": "string",
                        "enum": list(partition_views.ORDER_CHOICES),
                        "default": "group",
                    },
                    "Sort key; - before it for descending.",
                ),
            ],
            {"200": ok(ref("PartitionPage"))},
            "400",
        )
    },
    "/partitions/{partition_id}/": {
        "get": get(
            "getPartition",
            "One partition",
            p("partition_id_path"),
            {"200": ok(ref("Partition"))},
            "400",
            "404",
        )
    },
    "/partitions/{partition_id}/history/": {
        "get": get(
            "partitionHistory",
            "A partition's lag history (one series, not paginated)",
            p("partition_id_path", "since", "until", "resolution"),
            {"200": ok(ref("PartitionHistory"))},
            "400",
            "404",
            description="Partitions are rolled up hourly only: resolution=1m is a 400.",
        )
    },
    "/status/": {
        "get": get(
            "listStatus",
            "The current verdicts, worst groups first",
            [
                *p(*GROUP_FILTERS, *PAGE),
                query(
                    "partitions",
                    {
                        "type": "string",
                        "enum": list(status_views.PARTITION_MODES),
                        "default": "non_ok",
                    },
                    "Which partitions each group lists: those not OK, all, or none.",
                ),
            ],
            {"200": ok(ref("StatusPage"))},
            "400",
        )
    },
    "/status/changes/": {
        "get": get(
            "listStatusChanges",
            "How verdicts changed, newest first",
            [
                *p(*GROUP_FILTERS, "group_id", "topic", "partition", "since", "until", *PAGE),
                query("level", {"type": "string", "enum": ["group", "partition"]}),
            ],
            {"200": ok(ref("StatusChangePage"))},
            "400",
            description="status filters the new status.",
        )
    },
    "/rebalances/": {
        "get": get(
            "listRebalances",
            "Rebalances with their generation and cause, newest first",
            [
                *p("cluster", "source", "name", "search", "group_id", "since", "until", *PAGE),
                query(
                    "cause",
                    {"type": "string", "maxLength": 64},
                    "member_joined, member_left, subscription_changed, partitions_added, ...",
                ),
            ],
            {"200": ok(ref("RebalancePage"))},
            "400",
        )
    },
    "/producers/": {
        "get": get(
            "listProducers",
            "Producer clients per topic, and the topics under PRODUCER_EXPIRY",
            p("cluster", "topic"),
            {"200": ok(ref("Producers"))},
            "400",
            description="Not paginated: one row per producer client and topic.",
        )
    },
    "/alerts/": {
        "get": get(
            "listAlerts",
            "Alerts, newest first",
            [
                several("state", list(AlertState.values), "Alert state."),
                several("severity", list(Severity.values), "Severity."),
                query("level", {"type": "string", "enum": list(Level.values)}),
                *p("cluster"),
                query("group", _TEXT, "Group name (exact)."),
                *p("topic"),
                query("since", STRING, f"Fired at or after. {_DURATION_OR_TIME}"),
                query("until", STRING, f"Fired before. {_DURATION_OR_TIME}"),
                *p(*PAGE),
            ],
            {"200": ok(ref("AlertPage"))},
            "400",
        )
    },
    "/alerts/{alert_id}/": {
        "get": get(
            "getAlert",
            "One alert with its history",
            p("alert_id_path"),
            {"200": ok(ref("AlertDetail"))},
            "400",
            "404",
        )
    },
    "/alerts/{alert_id}/acknowledge": {
        "post": {
            "operationId": "acknowledgeAlert",
            "summary": "Acknowledge a firing alert (operate or write scope)",
            "description": "By the token's name (token:<name>) or the user. Twice is harmless; a "
            "resolved alert is a 409. Takes no body.",
            "parameters": p("alert_id_path"),
            "responses": answers({"200": ok(ref("AlertDetail"))}, "401", "403", "404", "409"),
        }
    },
    "/reports/": {
        "get": get(
            "listReports",
            "Lag reports, newest first",
            [several("status", list(ReportStatus.values), "Report status."), *p(*PAGE)],
            {"200": ok(ref("ReportPage"))},
            "400",
        ),
        "post": {
            "operationId": "createReport",
            "summary": "Queue a lag report (operate or write scope)",
            "description": "Built by a Celery task; follow Location (the report) until it is "
            "done, then its download_url. A bad field is a 400 naming it and "
            "nothing is queued.",
            "requestBody": {"required": True, "content": {JSON: {"schema": ref("ReportRequest")}}},
            "responses": answers(
                {
                    "202": {
                        "description": "Queued.",
                        "headers": {"Location": {"schema": URI, "description": "The report."}},
                        "content": {JSON: {"schema": ref("Report")}},
                    }
                },
                "400",
                "401",
                "403",
            ),
        },
    },
    "/reports/export": {
        "get": get(
            "exportReport",
            "A report streamed as it is produced (nothing stored or queued)",
            [
                query(
                    "cluster", {"type": "string", "maxLength": 100}, "Cluster name.", required=True
                ),
                *(
                    query(name, STRING, "A name or shell-style pattern; repeat for several.")
                    for name in ("group", "groups", "topic", "topics")
                ),
                *(
                    query(name, {"type": "string", "enum": list(SourceKind.values)})
                    for name in ("source", "sources")
                ),
                query("since", STRING, "A duration before end (24h, 90m, 7d)."),
                query("start", TIME),
                query("end", TIME),
                query("resolution", STRING, "raw (default), or a bucket: 1m, 5m, 1h, 1d ..."),
                query("format", {**_FORMAT, "default": "csv"}),
            ],
            {"200": _REPORT_FILE},
            "400",
        )
    },
    "/reports/{report_id}/": {
        "get": get(
            "getReport",
            "One report: status, progress, download_url once done",
            p("report_id_path"),
            {"200": ok(ref("Report"))},
            "400",
            "404",
        )
    },
    "/reports/{report_id}/download": {
        "get": get(
            "downloadReport",
            "A finished report's file",
            p("report_id_path"),
            {"200": _REPORT_FILE},
            "404",
            "409",
            "410",
            description="409 while queued or running; 410 once its file has expired.",
        )
    },
}


def document() -> dict[str, Any]:
    """The OpenAPI document (a fresh structure on every call: callers may change it)."""
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Lagwatch API",
            "version": "1",
            "summary": "Kafka consumer and Storm spout lag: clusters, groups, partitions, "
            "statuses, history, rebalances, alerts, reports.",
            "description": (
                "The REST API of Lagwatch (docs/API.md). Send an API token as "
                "`Authorization: Bearer <token>` (`manage.py api_token create NAME`). A token's "
                "scope is a role: read (viewer) reads everything, operate (operator) also "
                "acknowledges alerts and creates reports, write (admin) may do everything. A "
                "browser logged in to the dashboard has its user's role with its session "
                'cookie. Errors are `{"error": {"message", "field"}}`; unknown '
                "parameters are refused; lists are paginated (`page`, `page_size`); every "
                "path also answers without its trailing slash; a method an endpoint does not "
                "take is a 405 with `Allow`."
            ),
        },
        "servers": [{"url": "/api/v1", "description": "This Lagwatch"}],
        "security": [{"bearerToken": []}, {"session": []}],
        "paths": _copy(PATHS),
        "components": {
            "securitySchemes": {
                "bearerToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "lw_...",
                    "description": "An API token (read, operate or write scope).",
                },
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": settings.SESSION_COOKIE_NAME,
                    "description": "The dashboard's login session, with its user's role; "
                    "writes need Django's CSRF token (X-CSRFToken) as well.",
                },
            },
            "schemas": _copy(SCHEMAS),
            "parameters": _copy(PARAMETERS),
            "responses": _copy(RESPONSES),
        },
    }


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
