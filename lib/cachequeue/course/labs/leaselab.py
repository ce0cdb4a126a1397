"""The lease lab of chapter 06: a learner's claim and finish, judged by the history checker.

    result = leaselab.run(claim_sql, finish_sql, seed=1)
    result["violations"]     # [] when every operation of the run passed every check
    leaselab.diagnosis(result)   # None, or one Chinese sentence: the cause and its section
    result["cause"]          # the violation that sentence is about (the most telling one)
    result["shortest"]       # the violation with the fewest witness operations
    leaselab.witness_lines(result["cause"])   # its witness, one operation a line
    leaselab.figure(result)  # the run's timeline, the cause's witness in red

Every run starts with the prober (`verify.prober`): before the faults, one process walks
its own jobs through a late finish, a lease that runs out on the last attempt, a retry
that is not due yet, cancelled jobs and two claims contending for one row, through the
learner's own statements. So a wrong statement is caught on every seed, not when a fault
happens to land on a job in flight. And nothing around the learner's statements hides a
mistake: the sweep of expired leases with no attempt left runs after the learner's claim
(`verify.variants`), so a claim that forgot the cap takes such a job and is caught.

`run` checks the two statements (`verify.variants.check_custom`, and on `conn` when given:
`try_custom`, so that a statement the server refuses fails at once, not after a whole
run), writes them to a run folder and runs `verify.driver.run(variant="custom")` there:
real worker processes on a private throw-away server, under the seeded faults `faults`.
The folder (history, snapshot, workers' logs, timeline) is a temporary one, deleted when
the process exits, unless `folder` is given; `result["folder"]` says where it is.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg

from ...verify import driver, history, timeline, variants

__all__ = ["CAUSES", "FAULTS", "diagnosis", "faults_text", "figure", "run", "witness_lines"]

# The faults of the run after the prober: a paused holder that wakes after its lease ran
# out, a partition that outlasts the lease, slow packets. The prober alone catches every
# wrong answer of CAUSES on every seed; the faults show the same statements at work among
# real workers under a nemesis, as a deployment would meet them.
FAULTS = ("pause", "blackhole", "delay")

# What each check's violation says about the learner's statements (the first one in this
# order that the run found is the diagnosis): the cause, and where the chapter teaches it.
# A stale finish that was accepted also closes its attempt late, which shows as a lease
# overlap too: so the finish's checks come before lease-overlap, the claim's.
CAUSES = {
    "terminal-left": "完成语句把已经结束的任务（failed 或 cancelled）改成了 done：只能接受 "
                     "state = 'running'、lease_token 等于出示的令牌的任务；lease_token 为 NULL "
                     "说明没有人持有它，不是“谁都可以完成”（第 4 节，第 11 节对完成语句的要求）",
    "attempts": "领取语句接手了尝试次数已经用完的任务：过期租约的那一支少了 "
                "attempts - handbacks < max_attempts（第 11 节对领取语句的要求；表上的约束 "
                "attempts_capped 拒绝了这次领取，工作者因此退出）",
    "retry-delay": "领取语句领走了还没到期的任务：pending 的那一支少了 run_after <= cq_now()，"
                   "失败后的退避被跳过（第 04 章）",
    "lease-length": "租约的长度不对：locked_until 应当是数据库时钟的 cq_now() 加 %(lease)s 秒"
                    "（第 11 节对领取语句的要求）",
    "stale-accepted": "完成语句接受了不再持有租约的报告：租约过期以后、或别人接手以后，旧令牌的"
                      "完成必须被拒绝，所以既要核对令牌，也要核对 locked_until > cq_now()（第 3、4 节）",
    "one-result": "任务的结果由不再持有租约的尝试写入：完成语句既要核对令牌，也要核对 "
                  "locked_until > cq_now()（第 3、4 节）",
    "lease-overlap": "两次领取同时拿到了同一个任务：候选行没有用 FOR UPDATE SKIP LOCKED 锁住，"
                     "另一个领取等锁释放后照样改写了这一行（第 03 章）",
    "worker-died": "工作者进程因错误退出，多半是领取语句的记账出了错（例如尝试编号没有加一）",
    "lost": "有任务没有走到结局：领取语句没有领到应当领取的任务（第 11 节对领取语句的要求）",
    "unexpected": "出现了从未提交过的任务或结果",
    "renew-after-expiry": "过期的租约被续上了",
    "reclaim": "被杀掉的工作者持有的任务没有按时被别人接手：过期租约那一支的条件有误（第 3 节）",
    "side-effect": "副作用执行了不止一次，或者完成的任务没有执行副作用（第 3 节）",
    "ambiguous-as-failure": "一个已经生效的报告被当成了拒绝",
    "false-success": "一个没有生效的报告被当成了完成",
    "tenant-cap": "某个租户同时持有的任务超过了上限",
}


def run(claim: str, finish: str, *, seed: int = 1, jobs: int = 12, workers: int = 4,
        faults: Iterable[str] = FAULTS, per_kind: int = 2, time_limit: float = 30.0,
        conn: psycopg.Connection | None = None,
        folder: str | Path | None = None, server: Any = None,
        probe: bool = True) -> dict[str, Any]:
    """One seeded verify run of the learner's `claim` and `finish`; driver.run's result
    with `shortest` (the violation with the shortest witness, or None) and `folder`."""
    if conn is not None:
        variants.try_custom(conn, claim, finish)
    if folder is None:  # a temporary folder, deleted when this process exits
        folder = Path(tempfile.mkdtemp(prefix="cq-lab-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    folder = Path(folder)
    variants.write_custom(folder, claim, finish)
    result = driver.run(variant=variants.CUSTOM, seed=seed, jobs=jobs, workers=workers,
                        faults=tuple(faults), per_kind=per_kind, time_limit=time_limit,
                        workdir=folder, server=server, probe=probe)
    found = result["violations"]
    result["shortest"] = min(found, key=lambda v: len(v["witness"])) if found else None
    order = list(CAUSES)
    result["cause"] = min(found, key=lambda v: (order.index(v["check"]) if v["check"] in order
                                                else len(order), len(v["witness"]))) if found else None
    result["folder"] = str(folder)
    return result

# A worker that died of the database's refusal: the constraint names the rule broken.
_DIED_OF = {"attempts_capped": "attempts"}


def diagnosis(result: dict[str, Any]) -> str | None:
    """None when the run found no violation and settled every job; else one Chinese
    sentence: what is wrong with the statements, where the chapter teaches it, and the
    violation it is read from (check, job, message). The check cell prefixes "未通过："."""
    cause = result.get("cause")
    if cause is not None:
        check = cause["check"]
        if check == "worker-died":  # the database refused the statement: say which rule
            check = next((name for word, name in _DIED_OF.items() if word in cause["message"]),
                         check)
        return (f"{CAUSES.get(check, check)}。"
                f"依据：第 {cause['number']} 项检查（{cause['check']}），"
                + ("" if cause["job"] is None else f"任务 {cause['job']}：") + cause["message"])
    if result.get("inconclusive"):
        return (f"没有结论，运行被截断（{result['cut_short']}），"
                f"{len(result['inconclusive'])} 个任务没有走到结局；再运行一次检查单元格")
    return None


def faults_text(result: dict[str, Any]) -> str:
    """The faults a run injected, e.g. "pause×2, blackhole×2" (kinds it injected none of
    are left out)."""
    injected = result["faults_injected"]
    return ", ".join(f"{kind}×{n}" for kind, n in injected.items()
                     if n and kind != "cut_armed") or "none"


_TIMES = ("until", "created_at", "started_at", "finished_at", "locked_until", "rejected_at")


def _value(key: str, value: Any, zero: float) -> str:
    if key in _TIMES and isinstance(value, int | float) and zero:
        return f"{value - zero:.3f}s"
    if key in ("token", "lease_token") and isinstance(value, str):
        return value[:8]
    return str(value)


def _op_line(op: dict[str, Any], zero: float) -> str:
    if "row" in op:
        fields = {k: v for k, v in op.items() if k not in ("row", "output") and v is not None}
        return f"  row of {op['row']}: " + ", ".join(
            f"{k}={_value(k, v, zero)}" for k, v in fields.items())
    at = f"{op['time'] - zero:7.3f}s" if "time" in op and zero else " " * 8
    keep = ("job", "attempt", "token", "outcome", "until", "error")
    fields = ", ".join(f"{k}={_value(k, op[k], zero)}" for k in keep if op.get(k) is not None)
    return f"  {at} {op.get('process', '?'):>6} {op['type']:<7} {op['f']:<8} {fields}"


def witness_lines(violation: dict[str, Any], result: dict[str, Any] | None = None) -> str:
    """The witness of `violation`, one operation or row a line (times since the run began,
    when `result`, a kept run, is given)."""
    zero = 0.0
    if result is not None:
        ops = history.read(result["history"])
        zero = min((op["time"] for op in ops), default=0.0)
    return "\n".join(_op_line(op, zero) for op in violation["witness"])


def figure(result: dict[str, Any], violation: dict[str, Any] | None = None):
    """The timeline of a kept run (`run` keeps every run), `violation` (default: the
    cause's witness) highlighted."""
    ops = history.read(result["history"])
    snapshot = json.loads((Path(result["folder"]) / "snapshot.json").read_text(encoding="utf-8"))
    return timeline.figure(ops, snapshot, violation or result.get("cause"))
