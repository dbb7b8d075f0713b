"""Burrow conformance: every case of Burrow's evaluator test table gives Burrow's verdict.

The cases live in tests/data/burrow_evaluator_windows.json (provenance in its README): inputs in the ``evaluate_window`` format with only commits and broker offsets, so the
evaluator must reproduce Burrow's rules exactly.
"""

import pytest

from spark_jobs.evaluator import evaluate_document, parse_request
from tests.testdata import load_json

CASES = load_json("burrow_evaluator_windows.json")["cases"]


def test_the_table_is_all_there() -> None:
    kinds = [case["expected"]["kind"] for case in CASES.values()]
    assert kinds.count("partition") >= 16
    assert kinds.count("group") >= 2


@pytest.mark.parametrize("name", sorted(CASES))
def test_burrow_verdict(name: str) -> None:
    case = CASES[name]
    expected = case["expected"]
    out = evaluate_document(case["input"])
    if expected["kind"] == "partition":
        (got,) = out["partitions"]
    else:
        (got,) = out["groups"]
        assert got["total_lag"] == expected["total_lag"]
    assert got["status"] == expected["status"]
    assert got["complete"] == pytest.approx(expected["complete"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_burrow_inputs_carry_no_liveness(name: str) -> None:
    """The table is Burrow-only evidence: nothing in it may trigger an improvement."""
    request = parse_request(CASES[name]["input"])
    windows = [*request.partitions, *(p for g in request.groups for p in g.partitions)]
    assert windows
    for window in windows:
        assert (window.earliest, window.latest, window.alive, window.spout) == (None,) * 4
        assert not window.stale


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_verdict_has_a_one_sentence_reason(name: str) -> None:
    out = evaluate_document(CASES[name]["input"])
    verdicts = [*out["partitions"], *(p for g in out["groups"] for p in g["partitions"])]
    for verdict in verdicts:
        reason = verdict["reason"]
        assert reason.endswith(".") and reason.count(". ") == 0 and len(reason) > 20


def test_incomplete_group_partition_is_half_full_and_stopped() -> None:
    """Burrow's SingleRequest_Incomplete also checks the partition: complete 0.5, STOP."""
    out = evaluate_document(CASES["burrow_evaluator_SingleRequest_Incomplete_testgroup2"]["input"])
    (partition,) = out["groups"][0]["partitions"]
    assert partition["complete"] == pytest.approx(0.5)
    assert partition["status"] == "STOP"


def test_rewind_that_climbed_back_is_ok_but_one_that_did_not_is_rewind() -> None:
    """Cases 07 and 15 differ only in whether a later commit reached the pre-rewind offset."""
    recovered = evaluate_document(CASES["burrow_evaluator_CheckRules_07"]["input"])
    stuck = evaluate_document(CASES["burrow_evaluator_CheckRules_15"]["input"])
    assert recovered["partitions"][0]["status"] == "OK"
    assert stuck["partitions"][0]["status"] == "REWIND"
    assert "3000 to 2000" in stuck["partitions"][0]["reason"]
