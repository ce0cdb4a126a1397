"""course.graders.ch10 on fakeredis (with Lua): chapter 10's right answers pass, each
realistic wrong answer fails with the message that names its cause, re-runs agree."""

from __future__ import annotations

import fakeredis
import pytest

from cachequeue.course.graders import ch10
from cachequeue.shared.lock import EXTEND_SCRIPT

NS = "cq:t_extend:"


def reference(client, key, owner, ttl_ms):
    return client.register_script(EXTEND_SCRIPT)(keys=[key], args=[owner, ttl_ms]) == 1


def eval_with_set_xx(client, key, owner, ttl_ms):
    """Another right shape: EVAL (no registered script), SET XX PX, bool()."""
    return bool(client.eval("if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end "
                            "redis.call('set', KEYS[1], ARGV[1], 'XX', 'PX', ARGV[2]) return 1",
                            1, key, owner, ttl_ms))


def watch_multi(client, key, owner, ttl_ms):
    """A third right shape: optimistic transaction, EXEC fails if the key changed."""
    with client.pipeline() as pipe:
        try:
            pipe.watch(key)
            if pipe.get(key) != owner:
                return False
            pipe.multi()
            pipe.pexpire(key, ttl_ms)
            return pipe.execute() == [True]
        except Exception:  # WatchError: someone changed the key
            return False


def get_then_pexpire(client, key, owner, ttl_ms):
    if client.get(key) == owner:
        return bool(client.pexpire(key, ttl_ms))
    return False


def no_owner_check(client, key, owner, ttl_ms):
    return bool(client.pexpire(key, ttl_ms))


def set_xx(client, key, owner, ttl_ms):
    return bool(client.set(key, owner, xx=True, px=ttl_ms))


def recreates(client, key, owner, ttl_ms):
    script = client.register_script(
        "local v = redis.call('get', KEYS[1]) "
        "if v == ARGV[1] or not v then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
        "return 0")
    return script(keys=[key], args=[owner, ttl_ms]) == 1


def seconds(client, key, owner, ttl_ms):
    script = client.register_script(EXTEND_SCRIPT.replace("pexpire", "expire"))
    return script(keys=[key], args=[owner, ttl_ms]) == 1


def raw_reply(client, key, owner, ttl_ms):
    return client.register_script(EXTEND_SCRIPT)(keys=[key], args=[owner, ttl_ms])


def student(client, key, owner, ttl_ms):
    raise NotImplementedError


@pytest.mark.parametrize("answer", [reference, eval_with_set_xx, watch_multi])
def test_right_answers_pass_every_time_and_leave_no_key(client, answer):
    assert ch10.check_extend(answer, client, NS) == ch10.PASSED
    assert ch10.check_extend(answer, client, NS) == ch10.PASSED
    assert client.keys(NS + "*") == []


def test_stale_keys_of_an_earlier_run_do_not_change_the_verdict(client):
    client.set(NS + "lock:exercise", "rival")  # a key without a TTL left by an interrupted run
    client.set(NS + "lock:exercise-gap", "rival")
    assert ch10.check_extend(reference, client, NS) == ch10.PASSED


@pytest.mark.parametrize(("answer", "message"), [
    (get_then_pexpire, "先后发出了 GET、PEXPIRE"),
    (no_owner_check, "没有核对所有者"),
    (set_xx, "抢走了 me 的锁"),
    (recreates, "重新建了出来"),
    (seconds, "EXPIRE 以秒计"),
    (raw_reply, "实际返回整数 1"),
])
def test_wrong_answers_fail_with_their_cause(client, answer, message):
    for _ in range(2):  # the same verdict when re-run
        with pytest.raises(AssertionError, match=message):
            ch10.check_extend(answer, client, NS)
    assert client.keys(NS + "*") == []
    assert "execute_command" not in vars(client)


def test_the_student_copy_raises_its_own_not_implemented_error(client):
    with pytest.raises(NotImplementedError):
        ch10.check_extend(student, client, NS)
    assert client.keys(NS + "*") == []


def test_hostile_arguments_are_refused():
    with pytest.raises(TypeError, match="extend"):
        ch10.check_extend("not callable", fakeredis.FakeRedis(), NS)
    with pytest.raises(TypeError, match="client"):
        ch10.check_extend(reference, object(), NS)
