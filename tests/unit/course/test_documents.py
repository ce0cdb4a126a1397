"""DocumentStore: sample data, immutable snapshots, versions, deletion and role changes."""

from __future__ import annotations

import pytest

from cachequeue.course.app.access import PermissionDenied
from cachequeue.course.app.documents import DocumentStore


@pytest.fixture
def store():
    return DocumentStore.from_sample()


def test_sample_data_is_loaded(store):
    doc = store.document(42)
    assert (doc.tenant_id, doc.visibility, doc.version, doc.deleted) == (1, "team", 3, False)
    assert store.user(11).role == "member" and store.user(10).role == "admin"
    assert store.body(42, 3).startswith("第一季度完成搜索")
    assert store.document(43).visibility == "admins"


def test_publish_adds_a_version_and_leaves_old_snapshots_alone(store):
    before = store.document(42)
    after = store.publish(42, "第四版：全年目标调整。")
    assert (before.version, after.version) == (3, 4)
    assert store.document(42) == after and before.version == 3
    assert store.body(42, 4) == "第四版：全年目标调整。"
    assert store.body(42, 3).startswith("第一季度完成搜索")  # old versions stay readable


def test_delete_marks_a_tombstone_and_refuses_later_writes(store):
    store.delete(44)
    assert store.document(44).deleted
    with pytest.raises(PermissionDenied, match="deleted"):
        store.authorize(11, 44)
    with pytest.raises(ValueError, match="deleted"):
        store.publish(44, "新正文")
    with pytest.raises(ValueError, match="already deleted"):
        store.delete(44)
    assert store.document(44).version == 1


def test_set_role_revokes_admin_rights(store):
    assert store.authorize(10, 43) == "admin"
    store.set_role(10, "member")
    with pytest.raises(PermissionDenied, match="admins only"):
        store.authorize(10, 43)


def test_set_visibility_restricts_without_a_new_version(store):
    assert store.authorize(11, 42) == "member"
    after = store.set_visibility(42, "admins")
    assert after.version == 3
    with pytest.raises(PermissionDenied, match="admins only"):
        store.authorize(11, 42)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda s: s.user(99), LookupError, "no user 99"),
        (lambda s: s.document(99), LookupError, "no document 99"),
        (lambda s: s.body(42, 9), LookupError, "no version 9"),
        (lambda s: s.publish(42, "  "), ValueError, "non-empty"),
        (lambda s: s.publish(42, None), TypeError, "body must be a str"),
        (lambda s: s.set_role(11, "root"), ValueError, "role must be one of"),
        (lambda s: s.set_visibility(42, "public"), ValueError, "visibility must be one of"),
        (lambda s: s.delete(99), LookupError, "no document 99"),
    ],
)
def test_bad_input_changes_nothing(store, call, error, message):
    before = (store.document(42), store.user(11))
    with pytest.raises(error, match=message):
        call(store)
    assert (store.document(42), store.user(11)) == before
