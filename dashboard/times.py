"""Milliseconds since the epoch, as sources, records and the sample log carry time, into the
timezone-aware datetimes the database columns hold: one conversion for every stage."""

from __future__ import annotations

from datetime import UTC, datetime


def ms_to_dt(ms: int | None) -> datetime | None:
    """``ms`` as a UTC datetime; None stays None (a figure not known)."""
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)
