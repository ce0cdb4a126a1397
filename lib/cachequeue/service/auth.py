"""Who is calling: bearer tokens, compared in constant time, mapped to a tenant and a user.

Every route under /v1 depends on `authenticated`: it reads `Authorization: Bearer <token>`
and asks the app's authenticator (any callable `token -> Principal | None`) who that is.
The answers follow RFC 6750 §3.1, each with a `WWW-Authenticate` challenge:

    no Authorization header, or another scheme (Basic ...)   401, `Bearer realm="cachequeue"`
        (no error code: the client may not know that it must authenticate, or how)
    a Bearer credential that breaks the syntax: no token,    400, `..., error="invalid_request"`
        two, or characters outside b64token (§2.1)
    a well-formed token that is unknown (or too long to be   401, `..., error="invalid_token"`
        one of ours)

The token itself never appears in an answer or a log line.

`TokenTable` is the authenticator for a fixed set of tokens. It keeps only their SHA-256
digests and compares the caller's digest with every one of them using
`hmac.compare_digest`, without stopping at the first match: how long a check takes says
nothing about how much of a token was right.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from ..checks import check_instance, check_int, check_text
from .problems import Problem

__all__ = ["MAX_TOKEN_CHARS", "Authenticator", "Caller", "Principal", "TokenTable",
           "authenticated", "bearer_token"]

MAX_TOKEN_CHARS = 200
_REALM = 'Bearer realm="cachequeue"'
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*", re.ASCII)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the tenant whose jobs it may see, and who it is in that tenant."""

    tenant_id: int
    user_id: int | None = None
    name: str = ""

    def __post_init__(self) -> None:
        check_int(self.tenant_id, "tenant_id")
        if self.user_id is not None:
            check_int(self.user_id, "user_id")


Authenticator = Callable[[str], Principal | None]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TokenTable:
    """An authenticator for fixed tokens: `TokenTable({token: Principal})(token)`."""

    def __init__(self, tokens: Mapping[str, Principal]) -> None:
        check_instance(tokens, "tokens", Mapping)
        self._entries: list[tuple[bytes, Principal]] = []
        seen: set[bytes] = set()
        for token, principal in tokens.items():
            check_text(token, "each token", limit=MAX_TOKEN_CHARS)
            if not _B64TOKEN.fullmatch(token):  # a client could never send it (RFC 6750)
                raise ValueError("a token is letters, digits and -._~+/ (then any '='), "
                                 "no spaces")
            check_instance(principal, "each principal", Principal)
            digest = _digest(token)
            if digest in seen:
                raise ValueError("two principals share one token")
            seen.add(digest)
            self._entries.append((digest, principal))

    def __call__(self, token: str) -> Principal | None:
        given = _digest(token)
        found = None
        for digest, principal in self._entries:  # every entry, whatever matched before
            if hmac.compare_digest(digest, given):
                found = principal
        return found

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:  # never the tokens, not even their digests
        return f"TokenTable({len(self._entries)} tokens)"


def bearer_token(header: str | None) -> str:
    """The token in an Authorization header value, or the Problem RFC 6750 §3.1 asks for
    (see the module docstring): 401 for no credentials or another scheme, 400
    `malformed_token` for a Bearer credential that breaks the syntax."""
    text = "" if header is None else header.strip()
    scheme, _, token = text.partition(" ")
    if scheme.lower() != "bearer":
        raise Problem(401, "missing_token", "send the header 'Authorization: Bearer <token>'",
                      {"WWW-Authenticate": _REALM})
    token = token.strip()
    if not _B64TOKEN.fullmatch(token):
        raise Problem(400, "malformed_token",
                      "the Authorization header must be 'Bearer <token>': one token of "
                      "letters, digits and -._~+/",
                      {"WWW-Authenticate": f'{_REALM}, error="invalid_request"'})
    if len(token) > MAX_TOKEN_CHARS:  # well-formed, but longer than any token we issue
        raise _invalid_token()
    return token


def _invalid_token() -> Problem:
    return Problem(401, "invalid_token", "the token is not valid",
                   {"WWW-Authenticate": f'{_REALM}, error="invalid_token"'})


async def authenticated(request: Request) -> Principal:
    """FastAPI dependency: the caller's Principal, or the 401/400 Problem of bearer_token."""
    token = bearer_token(request.headers.get("authorization"))
    principal = request.app.state.service.authenticator(token)
    if principal is None:
        raise _invalid_token()
    return principal


# The authenticated caller, as a route parameter: `principal: Caller`.
Caller = Annotated[Principal, Depends(authenticated)]
