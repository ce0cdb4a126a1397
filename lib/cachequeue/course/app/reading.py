"""The read path of the document assistant: snapshot, authorize, key, cache, load.

`SummaryReader.read(user_id, document_id, language)` does what a request handler does:

1. read the user and the document row (snapshots: the version this request works on);
2. authorize, if `authorize_first` (else only the loader checks, like a WHERE clause that
   runs on a miss only);
3. build the key with the `key` function: `versioned_key` (every dimension, by
   `keys.cache_key`) or `document_only_key` (the id alone, the bug this chapter takes apart);
4. `cache.get_or_load(key, load)`, where `load` summarises the body of the snapshot's version.

Two optional hooks, `before_cache` and `before_model` (both `async (document) -> None`),
let a notebook stop a request at a chosen point with a `Hold`, so interleavings are
made by hand instead of by timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...cache import LoadingCache
from ...cache.keys import cache_key, parse_key
from ...checks import check_bool, check_callable
from .access import Document, authorize, view_of
from .documents import DocumentStore
from .summariser import Summariser

__all__ = [
    "Hold",
    "Summary",
    "SummaryReader",
    "document_only_key",
    "forget_document",
    "versioned_key",
]

Hook = Callable[[Document], Awaitable[None]]
KeyFunction = Callable[[Document, str, str], str]


@dataclass(frozen=True, slots=True)
class Summary:
    """A cached result, labelled with the version it was computed from (immutable)."""

    document_id: int
    version: int
    language: str
    text: str


def document_only_key(document: Document, view: str, language: str) -> str:
    """The incomplete key: the document id alone. Version, view and language are ignored."""
    return f"doc={document.id}"


def versioned_key(document: Document, view: str, language: str) -> str:
    """Every dimension that decides the summary: tenant, document, version, view, language."""
    return cache_key(
        tenant=document.tenant_id, document=document.id, version=document.version,
        viewer=view, lang=language,
    )


class Hold:
    """A barrier for a read path: reads whose document matches `when` wait until `release()`.

    `reached` is set when the first matching read arrives, so the caller can wait for it:
    `task = create_task(reader.read(...)); await hold.reached.wait()`.
    """

    def __init__(self, when: Callable[[Document], bool] = lambda document: True) -> None:
        if not callable(when):
            raise TypeError(f"when must be a predicate on a Document, got {when!r}")
        self.when = when
        self.reached = asyncio.Event()
        self._open = asyncio.Event()
        self.held = 0  # how many reads stopped here

    async def __call__(self, document: Document) -> None:
        if self.when(document) and not self._open.is_set():
            self.held += 1
            self.reached.set()
            await self._open.wait()

    def release(self) -> None:
        self._open.set()


class SummaryReader:
    """One way of reading summaries through a cache; the options are the chapter's variants."""

    def __init__(
        self,
        store: DocumentStore,
        cache: LoadingCache,
        model: Summariser,
        *,
        key: KeyFunction = versioned_key,
        authorize_first: bool = True,
        ttl: float = 30.0,
        before_cache: Hook | None = None,
        before_model: Hook | None = None,
    ) -> None:
        check_callable(key, "key", "a function (document, view, language) -> str")
        check_bool(authorize_first, "authorize_first")
        for name, hook in (("before_cache", before_cache), ("before_model", before_model)):
            if hook is not None:
                check_callable(hook, name, "an async function of a Document")
        cache.check_ttl(ttl)  # the cache's own rule, checked now rather than on the first read
        self.store, self.cache, self.model = store, cache, model
        self.key, self.authorize_first, self.ttl = key, authorize_first, ttl
        self.before_cache, self.before_model = before_cache, before_model

    async def read(self, user_id: int, document_id: int, language: str = "zh") -> Summary:
        """The summary `user_id` gets for `document_id`; PermissionDenied when refused."""
        user = self.store.user(user_id)
        document = self.store.document(document_id)  # this request's snapshot
        view = authorize(user, document) if self.authorize_first else view_of(user)
        if self.before_cache is not None:
            await self.before_cache(document)
        key = self.key(document, view, language)
        if not isinstance(key, str) or not key:
            raise TypeError(f"the key function returned {key!r}, not a non-empty str")

        async def load() -> Summary:
            authorize(user, document)  # the source's own filter: runs on a miss only
            if self.before_model is not None:
                await self.before_model(document)
            body = self.store.body(document.id, document.version)
            text = await self.model.asummarise(body, language)
            return Summary(document.id, document.version, language, text)

        return await self.cache.get_or_load(key, load, ttl=self.ttl)


def forget_document(cache: LoadingCache, *, tenant: int, document: int) -> int:
    """Invalidate every held entry of one document (all versions, views, languages).

    This is "hunting old entries": it scans every key, which only works because keys are
    readable (`keys.parse_key`). A key not made by `cache_key` raises ValueError.
    """
    doomed = [
        key for key in cache.keys()  # noqa: SIM118 (LoadingCache is not iterable)
        if (fields := parse_key(key))["tenant"] == tenant and fields["document"] == document
    ]
    for key in doomed:
        cache.invalidate(key)
    return len(doomed)
