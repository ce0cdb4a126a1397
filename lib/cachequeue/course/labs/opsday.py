"""A day of the queue on a manual clock: a noisy tenant, quiet tenants, a fixed pool of slots.

`run_day(conn, claim)` steps the database clock (`db.set_clock`) through a compressed day
(`Day`: two hours in 30-second steps by default). Quiet tenants submit one job every five
minutes; at minute 10 the noisy tenant submits hundreds at once. Every step the simulated
workers finish the jobs whose time is up, claim jobs for their free slots with `claim`
(`plain`, or `fair(...)`), and read the queue's depth and oldest wait per tenant from
`queue.metrics` -- the same figures `/metrics` exports. Nothing sleeps: a job "takes"
`job_seconds` of the manual clock, so every run gives the same table.

`quota_knee` does the same for one kind under a database rate limit (`queue.ratelimit`) at
several concurrencies; `claims_per_second` times real claims on a real backlog.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from ... import db, sqlfile
from ...checks import check_int
from ...clock import ManualClock
from ...queue import fairness, jobs, metrics, ratelimit
from ...queue.jobs import Claim
from ..probes import plans

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["Day", "claims_per_second", "clear", "fair", "plain", "plot_day", "plot_knee",
           "quota_knee", "run_day", "shares"]

_QUERIES = sqlfile.load(__package__, "opsday.sql")
Claimer = Callable[[psycopg.Connection, int, float], list[Claim]]


@dataclass(frozen=True)
class Day:
    """The compressed day: seconds, tenants, load and capacity."""

    hours: float = 2.0
    step: int = 30  # seconds between two looks at the queue
    slots: int = 4  # jobs the workers can run at once
    job_seconds: int = 60  # every job takes this long
    noisy_tenant: int = 1
    noisy_jobs: int = 400
    noisy_at: int = 600  # second at which the noisy tenant submits all of its jobs
    quiet_tenants: tuple[int, ...] = (2, 3, 4)
    quiet_every: int = 300  # each quiet tenant submits one job this often


def plain(conn: psycopg.Connection, limit: int, lease: float) -> list[Claim]:
    """The ordinary claim: oldest due job first (`jobs.claim_many`)."""
    return jobs.claim_many(conn, limit, lease=lease)


def fair(tenant_cap: int | None = None) -> Claimer:
    """The fair claim (`fairness.claim_fair`), with an optional per-tenant cap."""
    def claim(conn: psycopg.Connection, limit: int, lease: float) -> list[Claim]:
        return fairness.claim_fair(conn, limit, lease=lease, tenant_cap=tenant_cap)
    return claim


def clear(conn: psycopg.Connection) -> None:
    """Empty the jobs table (and what hangs off it) for the next run."""
    conn.execute(_QUERIES["clear"].sql)


def run_day(conn: psycopg.Connection, claim: Claimer, day: Day = Day()) -> pd.DataFrame:
    """Run the day from an empty queue; one row per (step, tenant): minute, tenant, pending,
    oldest_wait (seconds), claimed (jobs claimed in that step). Leaves the clock released."""
    import pandas as pd

    clear(conn)
    fairness.install(conn)
    clock = ManualClock()
    tenants = [day.noisy_tenant, *day.quiet_tenants]
    running: list[tuple[float, Claim]] = []
    rows = []
    try:
        while clock.now <= day.hours * 3600:
            now = clock.now
            db.set_clock(conn, clock.datetime())
            if now == day.noisy_at:
                plans.fill_pending(conn, day.noisy_jobs, tenant_id=day.noisy_tenant)
            if now % day.quiet_every == 0:
                for tenant in day.quiet_tenants:
                    jobs.submit(conn, tenant_id=tenant, kind="noop", payload={"t": now})
            ended = [c for end, c in running if end <= now]
            jobs.finish_many(conn, [(c, {}) for c in ended])
            running = [(end, c) for end, c in running if end > now]
            free = day.slots - len(running)
            claimed = claim(conn, free, 2.0 * day.job_seconds) if free else []
            running += [(now + day.job_seconds, c) for c in claimed]
            taken = Counter(c.tenant_id for c in claimed)
            pending = _by_tenant(metrics.figure(conn, "depth"), "pending")
            waits = _by_tenant(metrics.figure(conn, "oldest_wait"), "seconds", max)
            rows += [{"minute": now / 60, "tenant": t, "pending": pending.get(t, 0),
                      "oldest_wait": waits.get(t, 0.0), "claimed": taken.get(t, 0)}
                     for t in tenants]
            clock.advance(day.step)
    finally:
        db.set_clock(conn, None)
    return pd.DataFrame(rows)


def _by_tenant(rows: Iterable[dict], column: str, combine=sum) -> dict[int, float]:
    values: dict[int, list] = {}
    for row in rows:
        values.setdefault(int(row["tenant"]), []).append(row[column])
    return {t: combine(v) for t, v in values.items()}


def shares(frame: pd.DataFrame, start_minute: float, minutes: float) -> pd.Series:
    """Each tenant's share of the claims made in [start_minute, start_minute + minutes)."""
    window = frame[(frame.minute >= start_minute) & (frame.minute < start_minute + minutes)]
    claimed = window.groupby("tenant")["claimed"].sum()
    return claimed / claimed.sum()


def claims_per_second(conn: psycopg.Connection, claim: Claimer, *, claims: int = 300,
                      backlog: int = 10_000, tenants: int = 1) -> float:
    """Wall-clock claims per second of `claim` (one job per call) on a fresh backlog of
    `backlog` jobs of tenant 1 and ten jobs of each of `tenants` other tenants."""
    clear(conn)
    fairness.install(conn)
    plans.fill_pending(conn, check_int(backlog, "backlog", minimum=1), tenant_id=1)
    plans.fill_pending(conn, 10 * check_int(tenants, "tenants", minimum=1), tenant_id=2,
                       tenants=tenants)
    plans.analyze(conn)
    started = time.perf_counter()
    for _ in range(check_int(claims, "claims", minimum=1)):
        claim(conn, 1, 60.0)
    return claims / (time.perf_counter() - started)


def quota_knee(conn: psycopg.Connection, concurrencies: Iterable[int], *, per_second: float,
               job_seconds: int = 2, seconds: int = 60) -> pd.DataFrame:
    """Jobs completed per second at each concurrency, with the kind limited to `per_second`
    by the database bucket; the simulated workers run `seconds` of the manual clock."""
    import pandas as pd

    rows = []
    for concurrency in concurrencies:
        clear(conn)
        ratelimit.install(conn)
        clock = ManualClock()
        db.set_clock(conn, clock.datetime())
        ratelimit.set_limit(conn, "noop", per_second=per_second, burst=max(1.0, per_second))
        plans.fill_pending(conn, int(per_second * seconds) + concurrency * seconds)
        running: list[tuple[float, Claim]] = []
        done, end_at = 0, clock.now + seconds
        try:
            while clock.now <= end_at:
                db.set_clock(conn, clock.datetime())
                ended = [c for end, c in running if end <= clock.now]
                done += sum(jobs.finish_many(conn, [(c, {}) for c in ended]))
                running = [(end, c) for end, c in running if end > clock.now]
                free = concurrency - len(running)
                if free:
                    claimed = ratelimit.claim_limited(conn, "noop", free, lease=10.0 * job_seconds)
                    running += [(clock.now + job_seconds, c) for c in claimed]
                clock.advance(1)
        finally:
            db.set_clock(conn, None)
        rows.append({"concurrency": concurrency, "jobs_per_second": done / seconds})
    return pd.DataFrame(rows)


def plot_day(runs: dict[str, pd.DataFrame]) -> Figure:
    """Depth and oldest wait per tenant over the day, one column per run ({title: frame})."""
    from matplotlib.figure import Figure

    from ..views import plots  # noqa: F401  (registers the Chinese font)

    fig = Figure(figsize=(4.2 * len(runs), 5.6))
    axes = fig.subplots(2, len(runs), sharex=True, squeeze=False)
    for col, (title, frame) in enumerate(runs.items()):
        for row, (column, label) in enumerate((("pending", "待领取的任务数"),
                                               ("oldest_wait", "最久等待（分钟）"))):
            ax = axes[row][col]
            for tenant, part in frame.groupby("tenant"):
                values = part[column] / 60 if column == "oldest_wait" else part[column]
                ax.plot(part.minute, values, label=f"租户 {tenant}")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if row == 0:
                ax.set_title(title)
            else:
                ax.set_xlabel("模拟时间（分钟）")
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    return fig


def plot_knee(knee: pd.DataFrame, ceilings: dict[str, float]) -> Figure:
    """Measured jobs/s against concurrency, with each ceiling as a horizontal line."""
    from matplotlib.figure import Figure

    from ..views import plots  # noqa: F401

    fig = Figure(figsize=(6, 3.6))
    ax = fig.subplots()
    ax.plot(knee.concurrency, knee.jobs_per_second, marker="o", label="实测吞吐")
    for (name, value), style in zip(ceilings.items(), ("--", ":", "-."), strict=False):
        ax.axhline(value, linestyle=style, color="grey", label=f"{name}：{value:g} 个/秒")
    ax.set_xlabel("并发数（同时运行的任务）")
    ax.set_ylabel("完成的任务（个/秒）")
    ax.set_title("并发与吞吐：拐点在最低的上限处")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
