"""Chapter 14's exercise: a monitoring query that lists the sessions holding the horizon.

`check_holder_query(text)` runs the learner's SQL on a private server of its own, where it
has opened, in this order: a session that begins its transaction first but takes a
transaction id only last (so the oldest session and the oldest transaction start hold the
youngest horizon), a report in REPEATABLE READ between two statements (a snapshot), a long
statement still running (a snapshot), a session idle in transaction after a write (a
transaction id, no snapshot), a session idle in transaction in READ COMMITTED that has
only read (its snapshot ended with the statement: holds nothing), and an idle session (holds nothing), with transaction ids consumed in
between so that the four holders' ages differ. The query's first column must be those four
pids, oldest horizon first (not oldest session or transaction start), and nothing that holds
nothing; the session that
runs the query (which holds a snapshot while it runs) must not be among them. The query
runs in a READ ONLY transaction that is rolled back, with a statement timeout, and the
server is deleted afterwards, whatever happened.
"""

from __future__ import annotations

import contextlib

import psycopg

from ... import db, embedded
from ...checks import check_text
from .. import chapter
from ..procs import horizonload

__all__ = ["check_holder_query"]

MAX_QUERY = 5000
_BURN = "SELECT pg_current_xact_id()"  # an autocommit statement: one transaction id used


def _run(conn: psycopg.Connection, text: str) -> list:
    conn.execute("BEGIN READ ONLY")
    try:
        conn.execute("SET LOCAL statement_timeout = '5s'")
        try:
            cursor = conn.execute(text)
        except psycopg.Error as error:
            raise AssertionError(f"查询执行失败：{type(error).__name__}: "
                                 f"{str(error).splitlines()[0]}") from None
        assert cursor.description, "查询没有返回行：它应当是一条 SELECT，第一列是 pid"
        rows = cursor.fetchall()
    finally:
        conn.execute("ROLLBACK")
    return [row[0] for row in rows]


def _judge(pids: list, *, report: int, query: int, writer: int, late: int, empty: int,
           idle: int, me: int) -> None:
    assert all(isinstance(p, int) for p in pids), (
        f"第一列应当是 pid（整数），实际是 {pids[:5]!r}（从 pg_stat_activity 里选 pid）")
    assert me not in pids, (
        "结果里有执行这条查询的会话自己：查询运行时它也持有一个快照（backend_xmin），"
        "用 pid <> pg_backend_pid() 把它排除（第 3.2 节“监控”）")
    assert empty not in pids and idle not in pids, (
        "结果里有不占住视界的会话：“idle in transaction”只说明事务开着，读已提交下只读过的"
        "事务在语句结束后既没有快照也没有事务号。要看 backend_xmin 与 backend_xid（第 1 节）")
    assert writer in pids, (
        "漏掉了写过数据、停在事务里的会话：读已提交下语句结束后它没有快照（backend_xmin 为空），"
        "但它的事务号（backend_xid）同样占住视界，两列都要看（第 1 节）")
    assert query in pids, (
        "漏掉了正在运行的长查询：它的状态是 active，不是 idle in transaction，"
        "但语句运行期间它的快照占住视界（第 1 节）")
    assert report in pids, "漏掉了可重复读下两条语句之间的报表事务：它的快照一直占住视界（第 1 节）"
    assert late in pids, (
        "漏掉了一个先 BEGIN、很久之后才写数据的会话：它拿到事务号之后就占住视界（第 1 节）")
    ours = [p for p in pids if p in (report, query, writer, late)]
    assert ours == [report, query, writer, late], (
        "顺序不对：应当按占住的视界从老到新排列，即快照或事务号的年龄"
        "（age(...)）从大到小；不是按会话或事务开始的先后（pid、backend_start、xact_start）："
        "一个事务可以开始得早、却很晚才拿到事务号。最老的那个才是 VACUUM 的边界（第 3.2 节“监控”）")
    assert len(pids) == len(set(pids)) == 4, f"每个会话只应出现一次：实际是 {pids}"


def check_holder_query(text: str) -> list[int]:
    """Run `text` against the situation of the module docstring; the pids it returned if it
    passes, else an AssertionError naming the cause and the section (in Chinese)."""
    check_text(text, "text", limit=MAX_QUERY)
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(embedded.Server.private(settings=horizonload.SETTINGS))
        url = server.url
        _, schema = stack.enter_context(chapter.scratch("grade14", url=url))
        burner = stack.enter_context(db.connect(url=url))
        late = stack.enter_context(db.connect(url=url))  # the oldest session and transaction start
        late.execute("SELECT set_config('application_name', 'holder-late', false)")
        late.execute("BEGIN")  # no snapshot, no transaction id yet
        burner.execute(_BURN)
        report = stack.enter_context(horizonload.Holder(url, schema, "report"))
        burner.execute(_BURN)
        burner.execute(_BURN)
        query = stack.enter_context(horizonload.Holder(url, schema, "query"))
        burner.execute(_BURN)
        burner.execute(_BURN)
        writer = stack.enter_context(horizonload.Holder(url, schema, "writer"))
        burner.execute(_BURN)
        burner.execute(_BURN)
        late.execute(_BURN)  # now it holds a transaction id: the youngest of the four
        empty = stack.enter_context(db.connect(url=url))
        empty.execute("BEGIN")  # READ COMMITTED
        empty.execute("SELECT count(*) FROM pg_class")  # read only: idle in transaction, holding nothing
        idle = stack.enter_context(db.connect(url=url))
        asker = stack.enter_context(db.connect(url=url))
        pids = _run(asker, text)
        _judge(pids, report=report.pid, query=query.pid, writer=writer.pid,
               late=late.info.backend_pid, empty=empty.info.backend_pid, idle=idle.info.backend_pid,
               me=asker.info.backend_pid)
        return pids
