"""SummaryReader: the chapter's read paths, each interleaving ordered by a Hold, not by timing."""

from __future__ import annotations

import asyncio

import pytest

from cachequeue.cache import LoadingCache
from cachequeue.cache.keys import parse_key
from cachequeue.clock import ManualClock
from cachequeue.course.app.access import Document, PermissionDenied
from cachequeue.course.app.documents import DocumentStore
from cachequeue.course.app.reading import (
    Hold,
    SummaryReader,
    document_only_key,
    forget_document,
    versioned_key,
)
from cachequeue.course.app.summariser import Summariser

ADMIN, MEMBER = 10, 11


@pytest.fixture
def world():
    clock = ManualClock()
    return DocumentStore.from_sample(), LoadingCache(clock=clock), Summariser(), clock


def run(coro):
    return asyncio.run(coro)


def test_versioned_reader_loads_once_and_labels_the_version(world):
    store, cache, model, _ = world
    reader = SummaryReader(store, cache, model)

    async def scenario():
        return [await reader.read(MEMBER, 42), await reader.read(12, 42)]

    first, second = run(scenario())
    assert first is second and first.version == 3 and model.calls == 1
    assert cache.keys() == ["tenant=1|doc=42|v=3|view=member|lang=zh"]


async def stale_backfill(store, cache, model, key):
    """A reads v3, stops before the cache; the writer publishes v4 and deletes the key."""
    hold = Hold(lambda doc: doc.version == 3)
    reader = SummaryReader(store, cache, model, key=key, before_cache=hold)
    old = asyncio.create_task(reader.read(MEMBER, 42))
    await hold.reached.wait()
    new_doc = store.publish(42, "第四版：全年只做搜索。")
    cache.invalidate(key(new_doc, "member", "zh"))  # delete after write
    hold.release()
    old_result = await old
    return old_result, await reader.read(MEMBER, 42)


def test_document_only_key_lets_the_old_request_backfill_a_stale_value(world):
    store, cache, model, clock = world
    old, later = run(stale_backfill(store, cache, model, document_only_key))
    assert old.version == 3 and later.version == 3  # the stale value wins
    assert store.document(42).version == 4
    clock.advance(30.0)  # only the TTL ends it
    assert run(SummaryReader(store, cache, model, key=document_only_key).read(MEMBER, 42)).version == 4


def test_versioned_key_confines_the_old_request_to_the_old_version(world):
    store, cache, model, _ = world
    old, later = run(stale_backfill(store, cache, model, versioned_key))
    assert old.version == 3 and later.version == 4
    held = cache.keys()
    assert sorted(parse_key(k)["version"] for k in held) == [3, 4]


def test_invalidate_during_the_load_keeps_the_old_value_out(world):
    store, cache, model, _ = world
    hold = Hold(lambda doc: doc.version == 3)
    reader = SummaryReader(store, cache, model, key=document_only_key, before_model=hold)

    async def scenario():
        old = asyncio.create_task(reader.read(MEMBER, 42))
        await hold.reached.wait()
        store.publish(42, "第四版：全年只做搜索。")
        cache.invalidate("doc=42")
        hold.release()
        return await old, await reader.read(MEMBER, 42)

    old, later = run(scenario())
    assert (old.version, later.version) == (3, 4)


def test_document_only_key_without_authorization_leaks_admin_results(world):
    store, cache, model, _ = world
    leaky = SummaryReader(store, cache, model, key=document_only_key, authorize_first=False)

    async def scenario():
        await leaky.read(ADMIN, 43)
        return await leaky.read(MEMBER, 43)

    leaked = run(scenario())
    assert "百分之六" in leaked.text
    with pytest.raises(PermissionDenied):
        store.authorize(MEMBER, 43)


@pytest.mark.parametrize(
    "key, authorize_first", [(document_only_key, True), (versioned_key, False), (versioned_key, True)]
)
def test_either_fix_stops_the_leak(world, key, authorize_first):
    store, cache, model, _ = world
    reader = SummaryReader(store, cache, model, key=key, authorize_first=authorize_first)
    run(reader.read(ADMIN, 43))
    hits = cache.stats.hits
    with pytest.raises(PermissionDenied, match="admins only"):
        run(reader.read(MEMBER, 43))
    assert cache.stats.hits == hits


def test_revocation_and_deletion_refuse_at_once_with_authorize_first(world):
    store, cache, model, clock = world
    reader = SummaryReader(store, cache, model)
    run(reader.read(ADMIN, 43))
    run(reader.read(MEMBER, 42))
    store.set_role(ADMIN, "member")
    store.delete(42)
    with pytest.raises(PermissionDenied, match="admins only"):
        run(reader.read(ADMIN, 43))
    with pytest.raises(PermissionDenied, match="deleted"):
        run(reader.read(MEMBER, 42))
    assert clock() == 0.0 and len(cache) == 2  # entries still held; the check refused them
    assert forget_document(cache, tenant=1, document=42) == 1 and len(cache) == 1


def test_without_authorize_first_revocation_waits_for_the_ttl(world):
    store, cache, model, clock = world
    reader = SummaryReader(store, cache, model, key=document_only_key, authorize_first=False)
    run(reader.read(ADMIN, 43))
    store.set_role(ADMIN, "member")
    assert "百分之六" in run(reader.read(ADMIN, 43)).text
    clock.advance(30.0)
    with pytest.raises(PermissionDenied):
        run(reader.read(ADMIN, 43))


def test_language_is_a_dimension(world):
    store, cache, model, _ = world
    reader = SummaryReader(store, cache, model)

    async def scenario():
        return await reader.read(MEMBER, 42, "zh"), await reader.read(MEMBER, 42, "en")

    zh, en = run(scenario())
    assert zh.text.startswith("摘要") and en.text.startswith("Summary")


def test_hold_stops_only_matching_reads_and_counts_them():
    async def scenario():
        hold = Hold(lambda doc: doc.id == 1)
        passed = await hold(Document(2, 1, "t", "team", 1))  # returns at once
        waiting = asyncio.create_task(hold(Document(1, 1, "t", "team", 1)))
        await hold.reached.wait()
        assert not waiting.done()
        hold.release()
        await waiting
        return passed, hold.held

    assert run(scenario()) == (None, 1)


@pytest.mark.parametrize(
    "options, error",
    [
        ({"key": "doc"}, TypeError),
        ({"authorize_first": 1}, TypeError),
        ({"ttl": 0}, ValueError),
        ({"ttl": 61.0}, ValueError),
        ({"ttl": float("nan")}, ValueError),
        ({"ttl": True}, TypeError),
        ({"before_cache": object()}, TypeError),
    ],
)
def test_reader_options_are_validated(world, options, error):
    store, cache, model, _ = world
    with pytest.raises(error):
        SummaryReader(store, cache, model, **options)


def test_a_key_function_must_return_text(world):
    store, cache, model, _ = world
    reader = SummaryReader(store, cache, model, key=lambda doc, view, lang: doc.id)
    with pytest.raises(TypeError, match="key function"):
        run(reader.read(MEMBER, 42))
    assert len(cache) == 0 and model.calls == 0


def test_forget_document_refuses_keys_it_cannot_read(world):
    store, cache, model, _ = world
    run(SummaryReader(store, cache, model, key=document_only_key).read(MEMBER, 42))
    with pytest.raises(ValueError, match="not a cache key"):
        forget_document(cache, tenant=1, document=42)
