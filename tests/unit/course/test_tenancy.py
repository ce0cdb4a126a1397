"""Two tenants with a document 42 each: the tenant must be part of the key."""

from __future__ import annotations

import asyncio

from cachequeue.cache import LoadingCache
from cachequeue.clock import ManualClock
from cachequeue.course.app.documents import DocumentStore
from cachequeue.course.app.reading import SummaryReader, versioned_key
from cachequeue.course.app.summariser import Summariser, summarise_text
from cachequeue.course.app.tenancy import TENANT_TWO_BODY, tenant_two_store, tenantless_key


def test_tenant_two_has_its_own_document_42_at_the_same_version():
    mine, theirs = DocumentStore.from_sample().document(42), tenant_two_store().document(42)
    assert (mine.tenant_id, theirs.tenant_id) == (1, 2)
    assert mine.version == theirs.version == 3
    assert tenant_two_store().body(42, 3) == TENANT_TWO_BODY
    assert tenant_two_store().user(21).tenant_id == 2


def test_only_the_tenant_tells_the_two_documents_apart():
    mine, theirs = DocumentStore.from_sample().document(42), tenant_two_store().document(42)
    assert tenantless_key(mine, "member", "zh") == tenantless_key(theirs, "member", "zh")
    assert versioned_key(mine, "member", "zh") != versioned_key(theirs, "member", "zh")


def read_both(key):
    async def run():
        cache, model = LoadingCache(clock=ManualClock()), Summariser()
        one = SummaryReader(DocumentStore.from_sample(), cache, model, key=key)
        two = SummaryReader(tenant_two_store(), cache, model, key=key)
        return await one.read(11, 42), await two.read(21, 42)

    return asyncio.run(run())


def test_a_shared_cache_without_the_tenant_hands_one_tenants_summary_to_the_other():
    first, second = read_both(tenantless_key)
    assert second is first  # tenant 2's member got tenant 1's summary
    first, second = read_both(versioned_key)
    assert second.text == summarise_text(TENANT_TWO_BODY) != first.text
