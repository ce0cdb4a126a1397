"""cq_now() read many times inside one statement, by a frozen session and a live one (chapter 00).

    frozen = clockreads.read(conn)       # microseconds since the statement's first reading
    live = clockreads.read(other)
    clockreads.draw_readings({"冻结的会话": frozen, "未冻结的会话": live})

A frozen session (`db.set_clock`) reads the same moment on every row; a live one reads
`clock_timestamp()`, which moves on between rows of the same statement. The values of the
live line depend on the machine; the cell asserts the shape (flat, and non-decreasing with
more than one value), not the numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import psycopg

from ... import sqlfile
from ...checks import check_instance, check_int, check_text
from . import fonts  # noqa: F401  (registers the Chinese font for the labels)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MAX_READS", "draw_readings", "read"]

MAX_READS = 100_000


def read(conn: psycopg.Connection, reads: int = 1000) -> list[float]:
    """`reads` readings of cq_now() in one statement, in row order, as microseconds after the
    first one."""
    check_instance(conn, "conn", psycopg.Connection)
    check_int(reads, "reads", minimum=2, maximum=MAX_READS)
    rows = conn.execute(sqlfile.load(__package__, "clockreads.sql")["readings"].sql,
                        {"reads": reads}).fetchall()
    at = [float(value) for _, value in sorted(rows)]
    return [(value - at[0]) * 1e6 for value in at]


def draw_readings(series: Mapping[str, Sequence[float]], *,
                  title: str = "一条语句里读一千次 cq_now()") -> Figure:
    """One line per session: reading number against microseconds after the first reading."""
    from matplotlib.figure import Figure

    if not series:
        raise ValueError("nothing to draw: give at least one session's readings")
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    for label, values in series.items():
        check_text(label, "label")
        if len(values) < 2:
            raise ValueError(f"{label}: give at least two readings")
        ax.plot(range(1, len(values) + 1), list(values), label=label, linewidth=2)
    ax.set_xlabel("第几次读取（同一条语句里）")
    ax.set_ylabel("比第一次读数晚的微秒数")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig
