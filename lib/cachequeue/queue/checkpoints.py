"""Checkpoints of a multi-stage job (Q21): a stage is recorded only after its output exists.

A job that splits a document, summarises each part and combines the summaries should not
start over when its worker dies in the fourth part: the split and the first three parts are
done. `Checkpoints(conn, claim).stage(name, work)` runs `work()` only if the job has no
checkpoint `name` yet, records its output (JSON) afterwards, and returns it; a later attempt
of the same job gets the recorded output back without running `work` again:

    cp = checkpoints.Checkpoints(conn, claim)
    parts = cp.stage("split", lambda: split(text))
    summaries = [cp.stage(f"part:{i}", lambda p=p: summarise(p)) for i, p in enumerate(parts)]
    return cp.stage("combine", lambda: combine(summaries))

The stage that was running when the worker died runs again from its start (its output was
never recorded): keep a stage's outside effects idempotent or make the stage small. A
checkpoint is written only while the attempt holds its lease (a holder that lost the job
records nothing: `LeaseLost`). Table in `sql/checkpoints.sql`, installed by `install(conn)`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from .. import sqlfile
from ..checks import check_callable, check_instance, check_text
from ..errors import LeaseLost
from .jobs import Claim
from .limits import to_json

__all__ = ["Checkpoints", "LeaseLost", "install", "load"]

_QUERIES = sqlfile.load(__package__, "checkpoints.sql")


def install(conn: psycopg.Connection) -> None:
    """Create the job_checkpoints table unless it exists."""
    conn.execute(_QUERIES["install"].sql)


def load(conn: psycopg.Connection, job_id: int) -> dict[str, Any]:
    """{stage: output} of the stages the job has recorded, in recording order."""
    return dict(conn.execute(_QUERIES["load"].sql, {"job_id": job_id}).fetchall())


class Checkpoints:
    """The recorded stages of one claimed job; `stage()` runs or skips one stage.
    `ran` lists the stages this attempt actually ran; `skipped` those it found recorded."""

    def __init__(self, conn: psycopg.Connection, claim: Claim) -> None:
        self._conn = conn
        self._claim = check_instance(claim, "claim", Claim)
        self._done = load(conn, claim.job_id)
        self.ran: list[str] = []
        self.skipped: list[str] = []

    def stage(self, name: str, work: Callable[[], Any]) -> Any:
        """The output of stage `name`: recorded earlier, or `work()` now and then recorded."""
        check_text(name, "name")
        check_callable(work, "work")
        if name in self._done:
            self.skipped.append(name)
            return self._done[name]
        output = work()
        row = self._conn.execute(_QUERIES["record"].sql, {
            "job_id": self._claim.job_id, "lease_token": self._claim.lease_token,
            "stage": name, "output": to_json(output, "output")}).fetchone()
        if row is None:
            raise LeaseLost(f"job {self._claim.job_id}: stage {name!r} finished after attempt "
                            f"{self._claim.attempt} lost its lease; not recorded")
        self._done[name] = output
        self.ran.append(name)
        return output
