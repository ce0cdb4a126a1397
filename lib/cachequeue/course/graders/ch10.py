"""The grader of chapter 10's exercise: a learner's `extend(client, key, owner, ttl_ms)`.

    print(ch10.check_extend(extend, r, ns))   # "检查通过", or an AssertionError

`check_extend` works on two keys of its own under `namespace` (`lock:exercise`, `lock:exercise-gap`),
deletes them before it starts and again when it ends (pass or fail), so a right answer
passes any number of times and nothing is left behind. The student copy's
`NotImplementedError` goes through as it is: code not yet written. It runs five scenarios and names the
first cause it finds, with the section that teaches it:

- the owner extends: True (the boolean: a script replies with the integer 1), and the
  remaining time is `ttl_ms` milliseconds from now (PEXPIRE, not EXPIRE: §1);
- another owner extends: False, and neither the owner token nor the remaining time changed
  (the owner check: §2);
- the lock expired: False, and the key was not created again (§2, the exercise's rule 2);
- the lock belongs to someone else now: False, their lock untouched (§2);
- section 2's gap (`redislab.takeover_between`): between the answer's first and second
  command on the key, the hold runs out for real and "rival" acquires the lock; an answer
  that checks and changes in one step on the server (a script, or WATCH/MULTI/EXEC) has no
  such gap and passes, one that sends GET and then PEXPIRE changes the rival's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

from ...checks import check_callable, check_instance, check_text
from ..probes import redislab

__all__ = ["PASSED", "check_extend"]

PASSED = "检查通过"


def _call(extend: Callable[..., Any], client: redis.Redis, key: str, owner: str,
          ttl_ms: int, what: str) -> Any:
    try:
        return extend(client, key, owner, ttl_ms)  # NotImplementedError (the student copy) goes through
    except redis.RedisError as error:
        raise AssertionError(f"{what}时 extend 抛出了 {type(error).__name__}：{str(error)[:200]}"
                             "（脚本的语法、KEYS 与 ARGV 的个数对吗？）") from None


def _boolean(reply: Any, expected: bool, what: str) -> None:
    if reply is expected:
        return
    if isinstance(reply, int) and not isinstance(reply, bool) and bool(reply) is expected:
        raise AssertionError(f"{what}：extend 应当返回 {expected}（布尔值），实际返回整数 {reply!r}；"
                             "脚本回复的是整数，用 == 1 换成 True/False")
    raise AssertionError(f"{what}：extend 应当返回 {expected}，实际返回 {reply!r}")


def check_extend(extend: Callable[..., Any], client: redis.Redis, namespace: str) -> str:
    """Grade `extend` on `client` under `namespace`; return PASSED or raise AssertionError."""
    check_callable(extend, "extend")
    check_instance(client, "client", redis.Redis)
    check_text(namespace, "namespace", limit=200)
    lock, gap = namespace + "lock:exercise", namespace + "lock:exercise-gap"
    client.delete(lock, gap)
    try:
        _owner_and_stranger(extend, client, lock)
        _expired_and_taken(extend, client, lock)
        _the_gap(extend, client, gap)
    finally:
        client.delete(lock, gap)
    return PASSED


def _owner_and_stranger(extend: Callable[..., Any], client: redis.Redis, lock: str) -> None:
    client.set(lock, "me", px=1_000)
    _boolean(_call(extend, client, lock, "me", 60_000, "所有者续期"), True, "所有者续期")
    owner, left = client.get(lock), client.pttl(lock)
    if owner != "me":
        raise AssertionError(f"所有者续期之后，锁的值应当仍是所有者令牌 'me'，实际是 {owner!r}（只改过期时间，第 2 节）")
    if left > 60_000 * 10:
        raise AssertionError(f"续期 60000 毫秒之后剩余 {left} 毫秒：ttl_ms 是毫秒，要用 PEXPIRE，"
                             "EXPIRE 以秒计（第 1 节）")
    if not 59_000 < left <= 60_000:
        raise AssertionError(f"续期之后，剩余时间应为从现在起 ttl_ms = 60000 毫秒，实际是 {left} 毫秒（第 1 节）")
    client.pexpire(lock, 30_000)
    reply = _call(extend, client, lock, "someone-else", 120_000, "非所有者续期")
    owner, left = client.get(lock), client.pttl(lock)
    if owner != "me":
        raise AssertionError(f"非所有者的续期把锁的值改成了 {owner!r}：它抢走了 me 的锁。"
                             "先核对值等于 owner，再改过期时间（第 2 节）")
    if left > 30_000:
        raise AssertionError(f"非所有者的续期改动了 me 的剩余时间（{left} 毫秒）：extend 没有核对所有者，"
                             "只有值等于 owner 时才能 PEXPIRE（第 2 节）")
    _boolean(reply, False, "非所有者续期")


def _expired_and_taken(extend: Callable[..., Any], client: redis.Redis, lock: str) -> None:
    client.pexpire(lock, 20)  # the hold runs out for real
    redislab.wait_until_expired(client, lock)
    reply = _call(extend, client, lock, "me", 60_000, "锁过期之后续期")
    if client.exists(lock):
        raise AssertionError(f"锁已经过期，extend 却把键重新建了出来（值 {client.get(lock)!r}）：过期的锁"
                             "不能续期，也不能用 SET 重建，只能在值仍是 owner 时 PEXPIRE（第 2 节）")
    _boolean(reply, False, "已经过期的锁续期")
    client.set(lock, "new-owner", px=5_000)
    reply = _call(extend, client, lock, "me", 60_000, "锁换主之后续期")
    owner, left = client.get(lock), client.pttl(lock)
    if owner != "new-owner" or left > 5_000:
        raise AssertionError(f"锁已归 new-owner，me 的续期却改动了它（值 {owner!r}，剩余 {left} 毫秒）："
                             "先核对值等于 owner（第 2 节）")
    _boolean(reply, False, "锁已归别人所有时续期")


def _the_gap(extend: Callable[..., Any], client: redis.Redis, gap: str) -> None:
    client.set(gap, "me", px=5_000)
    with redislab.takeover_between(client, gap, owner="rival", ttl_ms=5_000) as seen:
        reply = _call(extend, client, gap, "me", 60_000, "第 2 节的缝隙里续期")
    if not seen.taken_over:
        return  # one command on the key (a script) or a transaction: no gap to open
    owner, left = client.get(gap), client.pttl(gap)
    if owner != "rival" or left > 5_000 or reply is not False:
        raise AssertionError(
            f"extend 对这个键先后发出了 {'、'.join(seen.commands)}：两条命令之间锁过期并归了 rival，"
            f"extend 却{'改动了 rival 的锁' if owner != 'rival' or left > 5_000 else '报告续期成功'}。"
            "核对与修改必须在服务器上一步完成：一段 Lua 脚本（第 2 节）")
