"""Worker wake-up: idle statements per second and submit-to-start latency, LISTEN/NOTIFY against polling.

Usage: .venv/bin/python bench/worker_wakeup.py [--idle 21] [--samples 20]

Each configuration runs as real `cachequeue worker` processes on a private throw-away
PostgreSQL (cachequeue.course.procs.wakeup.measure): once idle for `--idle` seconds (the
statements it sent, from its own log), once for `--samples` jobs submitted one at a time
(latency = first attempt start - insert, on the database clock). Prints JSON. About 2.5
minutes. The idle window (21 s) is not a multiple of the poll intervals or of the default
heartbeat (lease 30 s / 3), so the count is not cut exactly at a tick; expected steady
rates are 1/poll + 1/heartbeat statements per second (the default: 10 s poll when
listening, so about 0.2).
"""

from __future__ import annotations

import argparse
import json

from cachequeue import db, embedded
from cachequeue.course import chapter
from cachequeue.course.app import effects
from cachequeue.course.procs import wakeup
from cachequeue.course.procs.fleet import Fleet

CONFIGURATIONS = {
    "listen_poll_10s (default)": {},
    "listen_poll_5s": {"poll": 5.0},
    "listen_poll_1s": {"poll": 1.0},
    "poll_1s": {"poll": 1.0, "listen": False},
    "poll_100ms": {"poll": 0.1, "listen": False},
    "poll_20ms": {"poll": 0.02, "listen": False},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=21.0)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args(argv)
    out = {"idle_s": args.idle, "samples": args.samples, "heartbeat_s": 10.0, "configurations": {}}
    with embedded.Server.private() as server, db.connect(url=server.url) as conn:
        chapter.reset(conn, "bench_wakeup")
        effects.install(conn)
        out["server"] = "PostgreSQL " + db.server_version(conn, short=True)
        with Fleet("bench_wakeup", url=server.url) as fleet:
            for n, (label, options) in enumerate(CONFIGURATIONS.items()):
                out["configurations"][label] = wakeup.measure(
                    fleet, conn, f"w{n}", idle=args.idle, samples=args.samples, seed=n,
                    **options)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
