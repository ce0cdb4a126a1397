"""One worker process of a verify run: the real `queue.Worker`, recorded, maybe a mutant.

    python -m cachequeue.verify.workerproc '{"name": "w1", "history": "...", ...}'

The one argument is a JSON object (written by `driver`): name, history file, variant,
schema, url (the server, for the handler's side effect), proxy_url (the workers' way to
the queue, through the fault proxy), lease, poll, concurrency, batch_wait, policy, seed,
and optionally tenant_cap (the fair claim) or prefetch and batch (the throughput mode).
The handler (`verify_effect`) works `payload.work` seconds, fails its first
`payload.fails` attempts (a retryable error), then applies its side effect keyed by
`payload.key` (idempotent, `sql/driver.sql`) unless its lease was lost meanwhile.
A `custom` worker loads its claim and finish from custom.sql next to the history file.
`role: "prober"` runs the prober's scenarios (`verify.prober`) instead of a Worker;
`clock_skew` is how far this process's clock is ahead of the database's (only the
`worker-clock` mutant reads a worker's clock).
SIGTERM stops the worker gracefully (`Worker.stop()`); a `reset-on-shutdown` worker first
does what that mutant does.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from .. import db, sqlfile
from ..queue.retry import RetryableError
from ..queue.worker import BATCH, Worker
from . import instrument, prober, variants
from .history import Recorder

__all__ = ["main"]

KIND = "verify_effect"
_QUERIES = sqlfile.load(__package__, "driver.sql")


class _Effects:
    """The handler's external side effect, on its own direct connection per thread."""

    def __init__(self, url: str, schema: str, rec: Recorder) -> None:
        self.url, self.schema, self.rec = url, schema, rec
        self._local = threading.local()

    def apply(self, key: str, claim: Any) -> bool:
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._local.conn = db.connect(self.schema, url=self.url)
        try:
            row = conn.execute(_QUERIES["apply_effect"].sql, {
                "key": key, "job_id": claim.job_id, "lease_token": claim.lease_token}).fetchone()
        except Exception:
            conn.close()
            raise
        applied = row is not None
        self.rec.op("info", "effect", job=claim.job_id, attempt=claim.attempt,
                    token=str(claim.lease_token), key=key, applied=applied)
        return applied


def main(argv: list[str] | None = None) -> int:
    cfg = json.loads((argv if argv is not None else sys.argv[1:])[0])
    rec = Recorder(cfg["history"], cfg["name"])
    variants.install(cfg["variant"], folder=Path(cfg["history"]).parent)
    variants.set_worker_clock(cfg.get("clock_skew", 0.0))
    instrument.install(rec)
    instrument.verdicts(rec)
    if cfg.get("role") == "prober":
        rec.op("info", "started", pid=os.getpid())
        prober.probe(cfg, rec, instrument.RecordingPolicy(**cfg["policy"]))
        rec.op("info", "stopped")
        rec.close()
        return 0
    effects = _Effects(cfg["url"], cfg["schema"], rec)

    def handle(payload: dict, ctx: Any) -> dict:
        if ctx.wait(payload["work"]):
            raise RetryableError("stopped before the effect")
        if ctx.claim.attempt <= payload.get("fails", 0):
            raise RetryableError(f"planned failure of attempt {ctx.claim.attempt}")
        if ctx.should_stop():
            raise RetryableError("lease lost before the effect")
        effects.apply(payload["key"], ctx.claim)
        return {"key": payload["key"], "attempt": ctx.claim.attempt}

    def connect():
        return db.connect(cfg["schema"], url=cfg["proxy_url"], prepare_threshold=None,
                          connect_timeout=3)

    def probe_job(payload: dict) -> dict:  # the prober's jobs, if one is left to the fleet
        return {"probe": payload.get("probe")}

    worker = Worker(connect, {KIND: handle, prober.PROBE_KIND: probe_job}, name=cfg["name"],
                    concurrency=cfg["concurrency"], lease=cfg["lease"], poll=cfg["poll"],
                    shutdown_timeout=cfg.get("shutdown_timeout", 0.5),
                    policy=instrument.RecordingPolicy(**cfg["policy"]),
                    batch_wait=cfg["batch_wait"], rng=random.Random(cfg["seed"]),
                    prefetch=cfg.get("prefetch", 0), batch=cfg.get("batch", BATCH),
                    fair=cfg.get("tenant_cap") is not None, tenant_cap=cfg.get("tenant_cap"))

    def stop() -> None:
        if cfg["variant"] == "reset-on-shutdown":
            try:
                with db.connect(cfg["schema"], url=cfg["url"]) as conn:
                    changed = variants.on_shutdown(cfg["variant"], conn)
                rec.op("info", "reset", rows=changed)
            except Exception as exc:  # a mutant's extra; the stop itself must still happen
                rec.op("info", "reset", rows=0, error=repr(exc))
        worker.stop()

    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=stop, daemon=True).start())
    rec.op("info", "started", pid=os.getpid())
    worker.run()
    rec.op("info", "stopped")
    rec.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
