"""Bearer tokens: parsing the header, the token table (digests only, every entry compared),
and the sample users' tokens."""

import pytest

from cachequeue.course.app import data, webapp
from cachequeue.service import auth
from cachequeue.service.auth import Principal, TokenTable, bearer_token
from cachequeue.service.problems import Problem


def test_a_table_finds_the_principal_of_a_token_and_nothing_else():
    alice, bob = Principal(1, 10, "alice"), Principal(2, 20, "bob")
    table = TokenTable({"tok-alice": alice, "tok-bob": bob})
    assert table("tok-alice") is alice and table("tok-bob") is bob
    for wrong in ("tok-alic", "tok-alice2", "TOK-ALICE", "", "tok-carol"):
        assert table(wrong) is None
    assert repr(table) == "TokenTable(2 tokens)" and len(table) == 2


def test_a_table_keeps_digests_only_and_compares_every_entry(monkeypatch):
    table = TokenTable({"secret-1": Principal(1), "secret-2": Principal(2)})
    assert "secret" not in repr(vars(table)), "no token kept in memory as text"
    compared = []
    real = auth.hmac.compare_digest

    def spy(a, b):
        compared.append(a)
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    table("secret-1")
    assert len(compared) == 2, "no early exit at the first match"


@pytest.mark.parametrize("tokens, error", [
    ({"": Principal(1)}, ValueError),
    ({"a b": Principal(1)}, ValueError),
    ({"tok,1": Principal(1)}, ValueError),  # outside b64token: no client could send it
    ({"tök": Principal(1)}, ValueError),
    ({"x" * 201: Principal(1)}, ValueError),
    ({"tok": "tenant 1"}, TypeError),
    ([("tok", Principal(1))], TypeError),
])
def test_a_bad_table_is_refused(tokens, error):
    with pytest.raises(error):
        TokenTable(tokens)


def test_principals_check_their_fields():
    with pytest.raises(TypeError):
        Principal("1")
    with pytest.raises(TypeError):
        Principal(1, user_id=1.5)


REALM = 'Bearer realm="cachequeue"'


@pytest.mark.parametrize("header", [None, "", "   ", "Basic abc", "Digest x=1", "Bearerx abc"])
def test_no_bearer_credentials_is_a_401_with_a_bare_challenge(header):
    # RFC 6750 §3.1: a request without authentication, or with an unsupported method,
    # gets no error code: the client may not know that it has to authenticate.
    with pytest.raises(Problem) as caught:
        bearer_token(header)
    problem = caught.value
    assert (problem.status, problem.code) == (401, "missing_token")
    assert problem.headers == {"WWW-Authenticate": REALM}
    if header and " " in header.strip():
        assert header.split(" ", 1)[1] not in problem.detail


@pytest.mark.parametrize("header", [
    "Bearer", "Bearer  ", "Bearer a b", "Bearer tok,1", "Bearer tök", "Bearer a=b",
    'Bearer "quoted"'])
def test_a_malformed_bearer_credential_is_a_400_invalid_request(header):
    # RFC 6750 §3.1: invalid_request, "The resource server SHOULD respond with the HTTP
    # 400 (Bad Request) status code."
    with pytest.raises(Problem) as caught:
        bearer_token(header)
    problem = caught.value
    assert (problem.status, problem.code) == (400, "malformed_token")
    assert problem.headers == {"WWW-Authenticate": f'{REALM}, error="invalid_request"'}
    token = header.split(" ", 1)[1].strip() if " " in header else ""
    assert not token or token not in problem.detail


def test_a_well_formed_token_too_long_to_be_ours_is_an_invalid_token():
    with pytest.raises(Problem) as caught:
        bearer_token("Bearer " + "x" * 201)
    problem = caught.value
    assert (problem.status, problem.code) == (401, "invalid_token")
    assert problem.headers == {"WWW-Authenticate": f'{REALM}, error="invalid_token"'}
    assert "x" * 20 not in problem.detail


def test_b64token_padding_and_punctuation_are_accepted():
    assert bearer_token("Bearer aB0-._~+/==") == "aB0-._~+/=="


def test_the_scheme_is_case_insensitive_and_spaces_around_are_ignored():
    assert bearer_token("bearer abc") == "abc" == bearer_token("  Bearer   abc  ")


def test_every_sample_user_has_a_distinct_token_that_maps_to_them():
    users = webapp.sample_users()
    table = webapp.authenticator()
    assert len(table) == len(users) == len({u["token"] for u in users}) == 5
    for user in users:
        assert table(user["token"]) == Principal(user["tenant_id"], user["id"], user["name"])


def test_notebook_frames_show_users_without_their_tokens():
    assert "api_token" in data.rows("users")[0]
    assert list(data.frames()["users"].columns) == ["id", "tenant_id", "name", "role"]
