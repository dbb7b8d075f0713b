"""Fuzzed ``evaluate_window`` documents (docs/EVALUATOR.md): ``parse_request``,
``evaluate_document`` and the ``manage.py evaluate_window`` command.

Properties: a valid document is evaluated, one verdict per partition with a known status, and
the result is strict JSON; a bad one is a ``WindowInputError`` whose message starts with the
path of the field at fault (exit code 2 from the command), never another exception.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given
from hypothesis import strategies as st

from spark_jobs.evaluator import (
    STATUSES,
    WindowInputError,
    evaluate_document,
    parse_request,
)
from tests.fuzz import strategies as fs

_PATH_HEADS = ("document", "config", "now_ms", "partitions", "groups")


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def check_verdicts(doc: dict, result: dict) -> None:
    partitions = doc.get("partitions") or []
    groups = doc.get("groups") or []
    assert [v["id"] for v in result["partitions"]] == [p["id"] for p in partitions]
    assert [g["id"] for g in result["groups"]] == [g["id"] for g in groups]
    for g, given_group in zip(result["groups"], groups, strict=True):
        assert g["status"] in STATUSES and 0.0 <= g["complete"] <= 1.0
        assert len(g["partitions"]) == len(given_group["partitions"])
        assert isinstance(g["total_lag"], int) and g["total_lag"] >= 0
    for v in result["partitions"] + [p for g in result["groups"] for p in g["partitions"]]:
        assert v["status"] in STATUSES, v
        assert 0.0 <= v["complete"] <= 1.0
        assert isinstance(v["reason"], str) and v["reason"]
        assert all(isinstance(d["code"], str) for d in v["diagnosis"])


def check_document(doc: Any) -> str:
    """Evaluate one decoded document: "accepted" or "refused"; AssertionError when a property
    is broken (an unexpected exception escapes as it is)."""
    try:
        result = evaluate_document(doc)
    except WindowInputError as exc:
        head = exc.path.split(".")[0].split("[")[0]
        unknown_key = isinstance(doc, dict) and exc.path in map(str, doc)  # (may hold a ".")
        assert head in _PATH_HEADS or unknown_key, exc
        assert str(exc) == f"{exc.path}: {exc.problem}" and exc.problem
        return "refused"
    check_verdicts(doc, result)
    # The Spark job stores these documents; a NaN or an infinity is not JSON.
    json.dumps(result, allow_nan=False)
    return "accepted"


def run_command(text: str) -> tuple[int, str]:
    """``manage.py evaluate_window -`` with ``text`` on stdin: (exit code, output or message)."""
    out = io.StringIO()
    with mock.patch("sys.stdin", io.StringIO(text)):
        try:
            call_command("evaluate_window", "-", stdout=out)
        except CommandError as exc:
            assert str(exc).startswith("evaluate_window: "), exc
            return exc.returncode, str(exc)
    return 0, out.getvalue()


@given(fs.window_documents())
def test_valid_document_is_evaluated(doc: dict) -> None:
    request = parse_request(doc)
    assert len(request.partitions) == len(doc.get("partitions") or [])
    assert request.now_ms == doc["now_ms"]
    assert check_document(doc) == "accepted"


@given(fs.spoiled(fs.window_documents()) | fs.json_values)
def test_spoiled_document_is_refused_naming_the_field(doc: Any) -> None:
    check_document(doc)


@given(fs.window_documents() | fs.spoiled(fs.window_documents()))
def test_command_prints_the_verdicts_or_exits_2(doc: Any) -> None:
    text = fs.dumps(doc)
    code, out = run_command(text)
    if code == 0:
        assert json.loads(out) == evaluate_document(json.loads(text))
    else:
        assert code == 2


@given(
    st.text(max_size=60)
    | st.sampled_from(["", "{", "[" * 5000 + "]" * 5000, "1" * 5000, '{"now_ms": 1e999}',
                       '{"now_ms": NaN}', "\ufeff{}", '{"now_ms": 1, "now_ms": 2}'])
)  # fmt: skip
def test_command_on_text_that_is_not_a_document_exits_2(text: str) -> None:
    code, _ = run_command(text)
    assert code in (0, 2)


# Each found by the fuzzing, and fixed: NaN passed the range checks of the config's floats
# (every comparison with NaN is false) and the EvaluatorConfig's own check then raised a plain
# ValueError, not WindowInputError; the command ended in a traceback.
NAN_CONFIGS = [
    {"now_ms": 1, "config": {"minimum_complete": float("nan")}},
    {"now_ms": 1, "config": {"backpressure_share": float("nan")}},
]


@pytest.mark.parametrize("doc", NAN_CONFIGS, ids=["minimum_complete", "backpressure_share"])
def test_nan_in_config_is_a_window_input_error(doc: dict) -> None:
    with pytest.raises(WindowInputError):
        evaluate_document(doc)


# Integers beyond a float's range (JSON has no limit; Python reads up to 4,300 digits) were
# accepted by the parser, then overflowed in the reason's arithmetic; now beyond 64 bits is a
# WindowInputError naming the field.
HUGE_TIMES = {
    "now_ms": 10**400,
    "partitions": [{"id": "p", "commits": [{"offset": 1, "timestamp_ms": 0},
                                           {"offset": 2, "timestamp_ms": 10**399}],
                    "latest_offsets": [5], "current_lag": 3}],
}  # fmt: skip


def test_times_beyond_a_float_are_refused_or_evaluated() -> None:
    with contextlib.suppress(WindowInputError):
        evaluate_document(HUGE_TIMES)


# Found by benchmarks/bench_fuzz.py (fixed): _number checked the bounds, then float() overflowed.
def test_config_numbers_beyond_a_float_are_a_window_input_error() -> None:
    with pytest.raises(WindowInputError):
        evaluate_document({"now_ms": 1, "config": {"min_distance_s": 10**400}})
