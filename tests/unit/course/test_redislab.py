"""course.redislab.takeover_between on fakeredis: the lock changes hands exactly between a
client's first and second command on the key, and never around a single script."""

from __future__ import annotations

import fakeredis
import pytest

from cachequeue.course.probes import redislab
from cachequeue.shared.lock import EXTEND_SCRIPT

KEY = "cq:t_unit:lock"


@pytest.fixture
def client(client):
    """The conftest's fakeredis client, with "me" holding the lock."""
    client.set(KEY, "me", px=5_000)
    return client


def test_between_two_commands_the_hold_expires_and_the_rival_acquires(client):
    with redislab.takeover_between(client, KEY, owner="rival", ttl_ms=5_000) as seen:
        still_mine = client.get(KEY) == "me"
        extended = client.pexpire(KEY, 60_000)  # extends the rival's lock: the bug shown
    assert (still_mine, extended) == (True, True)
    assert seen.commands == ["GET", "PEXPIRE"] and seen.taken_over
    assert client.get(KEY) == "rival" and client.pttl(KEY) > 5_000


def test_one_script_has_no_gap_even_when_it_must_be_loaded_first(client):
    script = client.register_script(EXTEND_SCRIPT)
    client.script_flush()  # EVALSHA fails once (NoScriptError), SCRIPT LOAD, EVALSHA again
    with redislab.takeover_between(client, KEY, owner="rival", ttl_ms=5_000) as seen:
        reply = script(keys=[KEY], args=["me", 60_000])
    assert (reply, seen.commands, seen.taken_over) == (1, ["EVALSHA"], False)
    assert client.get(KEY) == "me" and client.pttl(KEY) > 5_000


def test_commands_on_other_keys_do_not_count_and_the_client_is_restored(client):
    with redislab.takeover_between(client, KEY, owner="rival", ttl_ms=5_000) as seen:
        client.get("cq:t_unit:other")
        client.get(KEY)
    client.get(KEY)
    assert (seen.commands, seen.taken_over) == (["GET"], False)
    assert "execute_command" not in vars(client)


def test_only_a_synchronous_client_is_accepted():
    with (pytest.raises(TypeError, match="client"),
          redislab.takeover_between(fakeredis.FakeAsyncRedis(), KEY, owner="x", ttl_ms=1)):
        pass
