"""The frozen database clock of the queue's integration tests: cq_now() at T0 + seconds."""

from datetime import UTC, datetime, timedelta

from cachequeue import db

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(conn, seconds):
    """Freeze this session's cq_now() at T0 + seconds."""
    db.set_clock(conn, T0 + timedelta(seconds=seconds))
