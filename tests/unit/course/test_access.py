"""authorize: the view is the role; other tenants, admins-only and deleted documents refused."""

from __future__ import annotations

import pytest

from cachequeue.course.app.access import Document, PermissionDenied, User, authorize, view_of

ADMIN = User(10, 1, "王敏", "admin")
MEMBER = User(11, 1, "李雷", "member")
OUTSIDER = User(20, 2, "赵律", "admin")
TEAM = Document(42, 1, "季度路线图", "team", 3)
ADMINS = Document(43, 1, "薪酬调整方案", "admins", 2)


@pytest.mark.parametrize(
    "user, document, view",
    [(ADMIN, TEAM, "admin"), (MEMBER, TEAM, "member"), (ADMIN, ADMINS, "admin")],
)
def test_allowed_reads_return_the_role_as_view(user, document, view):
    assert authorize(user, document) == view == view_of(user)


@pytest.mark.parametrize(
    "user, document, reason",
    [
        (MEMBER, ADMINS, "admins only"),
        (OUTSIDER, TEAM, "another tenant"),
        (ADMIN, Document(42, 1, "季度路线图", "team", 3, deleted=True), "deleted"),
        (MEMBER, Document(42, 1, "季度路线图", "team", 3, deleted=True), "deleted"),
    ],
)
def test_refused_reads_say_why(user, document, reason):
    with pytest.raises(PermissionDenied, match=reason) as caught:
        authorize(user, document)
    assert (caught.value.user_id, caught.value.document_id) == (user.id, document.id)
    assert reason in caught.value.reason


def test_the_view_is_a_role_shared_by_users_not_a_user_id():
    other_member = User(12, 1, "韩梅", "member")
    assert authorize(MEMBER, TEAM) == authorize(other_member, TEAM)


@pytest.mark.parametrize(
    "user, document, error",
    [
        (11, TEAM, TypeError),
        ({"id": 11, "role": "member"}, TEAM, TypeError),
        (MEMBER, 42, TypeError),
    ],
)
def test_wrong_argument_types(user, document, error):
    with pytest.raises(error):
        authorize(user, document)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: User(1, 1, "x", "owner"), ValueError, "role must be one of"),
        (lambda: User("1", 1, "x", "admin"), TypeError, "id must be an int"),
        (lambda: User(True, 1, "x", "admin"), TypeError, "id must be an int"),
        (lambda: Document(1, 1, "t", "public", 1), ValueError, "visibility must be one of"),
        (lambda: Document(1, 1, "t", "team", 0), ValueError, "version must be >= 1"),
        (lambda: Document(1, 1, "t", "team", "2"), TypeError, "version must be an int"),
        (lambda: Document(1, 1, "t", "team", 1, deleted=1), TypeError, "deleted must be True or False"),
    ],
)
def test_rows_are_validated(make, error, message):
    with pytest.raises(error, match=message):
        make()
