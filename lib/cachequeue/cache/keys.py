"""Cache keys as the identity of a result: readable, deterministic and injective.

A key names every input that decides a cached result, in a fixed order:

    tenant=1|doc=42|v=3|view=member|lang=zh|tpl=2|p=sha256:9f86d081884c7d659a2feaa0c55ad015

* `tenant`, `doc`, `v` and `view` always come first, in that order; the further result
  dimensions (`**more`: language, template version, model ...) follow sorted by name, and
  the hash of the private inputs (`p=`) comes last. Same inputs, same key, in every process.
* Injective: distinct inputs never share a key. Field names are plain lowercase
  identifiers; in values the characters ``%``, ``|``, ``=``, ``"``, space and anything
  not printable are percent-escaped (UTF-8 bytes as ``%XX``), so a value can never close
  its field and forge another one. `parse_key` inverts `cache_key`, which proves it.
* Types matter: the ids and the version are ints (a str such as "42" is refused, so one
  document cannot become two entries through a URL parameter); in `**more`, the int 2 and
  the str "2" are different results and are written `tpl=2` and `tpl="2"`.
  bool, float and None are refused everywhere: say `"yes"`, `"0.2"` or leave it out.
* Private inputs (prompt text) appear only as `p=sha256:<32 hex>`: SHA-256 over an
  unambiguous length-prefixed encoding of the mapping, cut to 128 bits. 128 bits make an
  accidental collision negligible (birthday bound ~2**64 prompts for one document and
  view) and a second preimage infeasible, so the cut costs no correctness. The hash is
  unkeyed: whoever reads a key can *confirm a guess* of the prompt. When prompts come from
  a small guessable set and that matters, use an HMAC with a server secret instead.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from ..checks import check_int

__all__ = ["FIELDS", "cache_key", "parse_key", "private_digest"]

# Parameter name -> label in the key, in key order. The labels are reserved.
FIELDS = {"tenant": "tenant", "document": "doc", "version": "v", "viewer": "view"}
_RESERVED = frozenset(FIELDS) | frozenset(FIELDS.values()) | {"private", "p"}
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
_INT_LIKE = re.compile(r"-?[0-9]+")  # what an int looks like in a key (ASCII digits only)
_ESCAPE = frozenset('%|="')
_DOMAIN = b"cachequeue.keys.private.v1\x00"  # keeps this hash apart from any other use
_DIGEST_HEX = 32  # 128 bits


def _escape(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPE or ch == " " or not ch.isprintable():
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            raw.append(int(text[i + 1 : i + 3], 16))
            i += 3
        else:
            raw += text[i].encode("utf-8")
            i += 1
    return raw.decode("utf-8")


def _id(name: str, value: Any, minimum: int) -> str:
    if isinstance(value, str):  # the usual slip: an id straight from a URL or a form
        raise TypeError(f"{name} must be an int, got str {value!r} "
                        "(convert it with int() where it enters)")
    return str(check_int(value, name, minimum=minimum))


def _utf8(name: str, value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} must be valid Unicode text (it has a lone surrogate)") from None


def _text(name: str, value: str) -> str:
    if not value:
        raise ValueError(f"{name} must not be empty (leave the dimension out instead)")
    _utf8(name, value)
    escaped = _escape(value)
    # A str that reads like an int is quoted, so "2" and 2 never share a key.
    return f'"{escaped}"' if _INT_LIKE.fullmatch(escaped) else escaped


def _value(name: str, value: Any) -> str:
    if isinstance(value, str):
        return _text(name, value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(
        f"dimension {name} must be a str or an int, got {type(value).__name__} {value!r}"
        " (write floats as text, bools as 'yes'/'no', and leave out what does not apply)"
    )


def _viewer(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"viewer must be a permission view such as 'admin' or 'member' (a str), "
            f"not {type(value).__name__} {value!r}: keying by user id splits the cache per "
            "user, keying by nothing leaks one role's result to another"
        )
    return _text("viewer", value)


def private_digest(private: Mapping[str, str]) -> str:
    """`sha256:` + the first 32 hex digits of SHA-256 over the mapping, names sorted.

    Each name and value is written as `<byte length>:<utf-8 bytes>`, so no two mappings
    share an encoding (and so, up to a hash collision, a digest).
    """
    if not isinstance(private, Mapping):
        raise TypeError(f"private must be a mapping of name -> text, got {type(private).__name__}")
    if not private:
        raise ValueError("private must not be empty (pass None when there are no private inputs)")
    for name, text in private.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"private input names must be non-empty str, got {name!r}")
        if not isinstance(text, str):
            raise TypeError(f"private input {name!r} must be a str, got {type(text).__name__}")
    h = hashlib.sha256(_DOMAIN)
    for name in sorted(private):
        for part in (_utf8("private input name", name), _utf8(f"private input {name!r}", private[name])):
            h.update(b"%d:" % len(part))
            h.update(part)
    return "sha256:" + h.hexdigest()[:_DIGEST_HEX]


def cache_key(
    *,
    tenant: int,
    document: int,
    version: int,
    viewer: str,
    private: Mapping[str, str] | None = None,
    **more: str | int,
) -> str:
    """The key of one result: every dimension that decides it, and nothing in clear that is private.

    >>> cache_key(tenant=1, document=42, version=3, viewer="member", lang="zh", tpl=2)
    'tenant=1|doc=42|v=3|view=member|lang=zh|tpl=2'
    >>> cache_key(tenant=1, document=42, version=3, viewer="a|b", tpl="2")
    'tenant=1|doc=42|v=3|view=a%7Cb|tpl="2"'

    Raises TypeError for a value of the wrong type (a str id, a bool, a float, None, a user
    id as viewer) and ValueError for an empty or out-of-range value or a bad dimension name.
    """
    parts = [
        f"tenant={_id('tenant', tenant, 0)}",
        f"doc={_id('document', document, 0)}",
        f"v={_id('version', version, 1)}",
        f"view={_viewer(viewer)}",
    ]
    for name in sorted(more):
        if not _NAME.fullmatch(name):
            raise ValueError(
                f"dimension name {name!r} must be a lowercase identifier "
                "([a-z][a-z0-9_]*, at most 32 characters)"
            )
        if name in _RESERVED:
            raise ValueError(f"dimension name {name!r} is reserved for the fixed fields")
        parts.append(f"{name}={_value(name, more[name])}")
    if private is not None:
        parts.append(f"p={private_digest(private)}")
    return "|".join(parts)


def parse_key(key: str) -> dict[str, Any]:
    """Invert `cache_key`: the dimensions under their parameter names (`private` is the digest).

    >>> parse_key('tenant=1|doc=42|v=3|view=member|tpl="2"')
    {'tenant': 1, 'document': 42, 'version': 3, 'viewer': 'member', 'tpl': '2'}
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}")
    labels = {label: name for name, label in FIELDS.items()} | {"p": "private"}
    out: dict[str, Any] = {}
    for field in key.split("|"):
        label, sep, token = field.partition("=")
        name = labels.get(label, label)
        if not sep or not token or name in out:
            raise ValueError(f"not a cache key made by cache_key: {key!r}")
        if name == "private":
            out[name] = token
        elif _INT_LIKE.fullmatch(token):
            out[name] = int(token)
        elif len(token) >= 2 and token[0] == token[-1] == '"':
            out[name] = _unescape(token[1:-1])
        else:
            out[name] = _unescape(token)
    if list(out)[:4] != list(FIELDS):
        raise ValueError(f"not a cache key made by cache_key: {key!r}")
    return out
