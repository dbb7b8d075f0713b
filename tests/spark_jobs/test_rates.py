"""Produce/consume rates, lag slope and ETA to drain."""

import pytest

from spark_jobs.evaluator.rates import Sample, rates


def test_too_few_samples_or_no_elapsed_time() -> None:
    assert rates([]) is None
    assert rates([Sample(0, 10, 5)]) is None
    assert rates([Sample(1000, 10, 5), Sample(1000, 20, 6)]) is None


def test_draining_consumer_has_an_eta() -> None:
    r = rates([Sample(0, 1000, 0), Sample(10_000, 1100, 500)])
    assert r.produce_per_s == pytest.approx(10)
    assert r.consume_per_s == pytest.approx(50)
    assert r.lag_slope_per_s == pytest.approx(-40)
    assert r.eta_s == pytest.approx(600 / 40)
    assert r.already_drained is False


def test_slow_consumer_never_drains() -> None:
    r = rates([Sample(0, 1000, 0), Sample(10_000, 2000, 100)])
    assert r.eta_s is None
    assert r.lag_slope_per_s == pytest.approx(90)


def test_stopped_consumer_on_quiet_topic_never_drains() -> None:
    r = rates([Sample(0, 1000, 900), Sample(10_000, 1000, 900)])
    assert r.eta_s is None
    assert r.produce_per_s == 0


def test_caught_up_consumer_is_drained() -> None:
    r = rates([Sample(0, 1000, 1000), Sample(10_000, 1000, 1000)])
    assert r.already_drained is True
    assert r.eta_s == 0.0
