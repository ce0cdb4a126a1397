"""The turn-by-turn harness of the worker tests (test_worker_turns, test_worker_prefetch):
a Worker on a manual clock whose connections run on the database clock T0 + `db_at`."""

import time
from collections import Counter
from datetime import timedelta

import psycopg
from frozen import T0

from cachequeue import db
from cachequeue.clock import ManualClock
from cachequeue.queue import Worker

WAIT = 30  # seconds: the bound on "eventually"


class Harness:
    """A Worker on a manual clock whose connections run on the database clock T0 + `db_at`."""

    def __init__(self, schema, handlers, **kw):
        self.schema = schema
        self.clock = ManualClock()
        self.conns: list[psycopg.Connection] = []
        self.db_at = 0.0
        kw.setdefault("listen", False)
        kw.setdefault("name", "turns")
        self.worker = Worker(self._connect, handlers, clock=self.clock, **kw)

    def _connect(self):
        conn = db.connect(self.schema)
        db.set_clock(conn, T0 + timedelta(seconds=self.db_at))
        self.conns.append(conn)
        return conn

    def turn(self) -> Counter:
        return self.worker.run_once()

    def elapse(self, seconds: float) -> None:
        """Move the worker's clock and its connections' database clock on together."""
        self.clock.advance(seconds)
        self.db_at += seconds
        for conn in self.conns:
            if not conn.closed:
                db.set_clock(conn, T0 + timedelta(seconds=self.db_at))

    def turns_until(self, done) -> Counter:
        """Turns until `done(total)`; between turns, wait for the loop's wake-up byte (a
        handler finished), bounded."""
        total = Counter()
        deadline = time.monotonic() + WAIT
        while not done(total):
            assert time.monotonic() < deadline, f"never happened; so far {total}"
            self.worker.wait(0.5)
            total += self.turn()
        return total
