"""Kinds: a new queue accepts none; the course, a worker and `serve --workers` register theirs."""

import uuid

import pytest

from cachequeue import db, queue
from cachequeue.cli import worker as worker_cli
from cachequeue.errors import UnknownKind
from cachequeue.queue import jobs, kinds


def test_kinds_register_refuses_bad_input_and_writes_nothing(conn):
    before = kinds.registered(conn)
    assert {"noop", "summarise", "flaky", "always_fail"} <= set(before)
    for bad, error in [([], TypeError), ({}, ValueError), ({"": "x"}, ValueError),
                       ({"ok": ""}, ValueError), ({"k": "d", 3: "d"}, TypeError),
                       ({"a\x00": "d"}, ValueError), ({"k" * 201: "d"}, ValueError)]:
        with pytest.raises(error):
            kinds.register(conn, bad)
    assert kinds.registered(conn) == before
    with pytest.raises(UnknownKind):
        jobs.submit(conn, tenant_id=1, kind="resize", payload={})
    assert kinds.register(conn, {"resize": "resize an image"}) == 1
    assert jobs.submit(conn, tenant_id=1, kind="resize", payload={}, priority=3)


def test_a_cli_worker_registers_its_handlers_kinds_in_a_bare_queue(database_url, capsys):
    name = f"t_{uuid.uuid4().hex[:12]}"
    with db.connect() as conn:
        db.reset_schema(conn, name, queue.install)
        try:
            assert kinds.registered(conn) == {}
            worker_cli._register(name, {"resize": print, "noop": print}, "myapp.jobs:HANDLERS")
            assert kinds.registered(conn) == {"noop": "handled by myapp.jobs:HANDLERS",
                                              "resize": "handled by myapp.jobs:HANDLERS"}
            assert jobs.submit(conn, tenant_id=1, kind="resize", payload={})
        finally:
            db.drop_schema(conn, name)
    # A schema without a queue: one line, and the worker would still start.
    worker_cli._register(name, {"resize": print}, "myapp.jobs:HANDLERS")
    assert "were not registered" in capsys.readouterr().err
