"""cache_key: determinism, injectivity (also against forged separators), readability,
private inputs only as a hash, and a clear error for every kind of bad input."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cachequeue.cache.keys import FIELDS, cache_key, parse_key, private_digest

BASE = {"tenant": 1, "document": 42, "version": 3, "viewer": "member"}
RESERVED = set(FIELDS) | set(FIELDS.values()) | {"private", "p"}

# Text that an attacker would try: separators, escapes, quotes, digits, field names.
pieces = st.sampled_from(list('|=%"2 0-\x00\n\u2028中') + ["tenant", "doc", "v=", "|p=", "%7C"])
tricky = st.lists(pieces, min_size=1, max_size=8).map("".join)
texts = st.one_of(st.text(min_size=1, max_size=12), tricky)
values = st.one_of(texts, st.integers(min_value=-(10**20), max_value=10**20))
names = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(lambda n: n not in RESERVED)
privates = st.none() | st.dictionaries(texts, st.one_of(st.just(""), texts), min_size=1, max_size=3)


@st.composite
def inputs(draw):
    return {
        "tenant": draw(st.integers(min_value=0, max_value=10**6)),
        "document": draw(st.integers(min_value=0, max_value=10**6)),
        "version": draw(st.integers(min_value=1, max_value=10**6)),
        "viewer": draw(texts),
        "private": draw(privates),
        **draw(st.dictionaries(names, values, max_size=3)),
    }


def expected(args: dict) -> dict:
    """What parse_key must give back: the inputs, with private replaced by its digest."""
    out = {k: v for k, v in args.items() if k != "private"}
    if args.get("private") is not None:
        out["private"] = private_digest(args["private"])
    return out


# ---------------------------------------------------------------- properties


@given(inputs())
def test_parse_key_inverts_cache_key(args):
    # A left inverse exists, so cache_key is injective on everything but the private hash.
    assert parse_key(cache_key(**args)) == expected(args)


@given(inputs(), inputs())
def test_distinct_inputs_give_distinct_keys(a, b):
    if expected(a) != expected(b):
        assert cache_key(**a) != cache_key(**b)
    else:
        assert cache_key(**a) == cache_key(**b)


@given(inputs(), st.randoms())
def test_key_is_deterministic_and_ignores_argument_order(args, rnd):
    items = list(args.items())
    rnd.shuffle(items)
    assert cache_key(**dict(items)) == cache_key(**args)


@given(inputs())
def test_one_field_per_dimension_whatever_the_values(args):
    key = cache_key(**args)
    fields = key.split("|")
    extra = len(args) - 5  # **more
    assert len(fields) == 4 + extra + (args["private"] is not None)
    assert [f.split("=", 1)[0] for f in fields[:4]] == ["tenant", "doc", "v", "view"]
    assert all(f.count("=") == 1 for f in fields)


@given(inputs().filter(lambda a: a["private"] is not None))
def test_private_inputs_appear_only_as_a_short_hash(args):
    with_private = cache_key(**args)
    without = cache_key(**{**args, "private": None})
    head, _, digest = with_private.rpartition("|p=")
    assert head == without
    assert re.fullmatch(r"sha256:[0-9a-f]{32}", digest)


@given(privates.filter(bool), privates.filter(bool))
def test_distinct_private_mappings_get_distinct_digests(a, b):
    assert (private_digest(a) == private_digest(b)) == (a == b)


@given(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda s: s not in RESERVED))
def test_plain_values_are_readable_verbatim(word):
    key = cache_key(tenant=1, document=42, version=3, viewer=word, **{word: word})
    assert f"view={word}" in key.split("|")
    assert f"{word}={word}" in key.split("|")


# ---------------------------------------------------------------- examples


def test_example_key_reads_like_the_docs():
    key = cache_key(**BASE, lang="zh", tpl=2, model="summary-v1")
    assert key == "tenant=1|doc=42|v=3|view=member|lang=zh|model=summary-v1|tpl=2"


def test_int_and_str_dimensions_differ():
    as_int = cache_key(**BASE, tpl=2)
    as_str = cache_key(**BASE, tpl="2")
    assert as_int.endswith("tpl=2") and as_str.endswith('tpl="2"')
    assert parse_key(as_int)["tpl"] == 2 and parse_key(as_str)["tpl"] == "2"


@pytest.mark.parametrize(
    "forged, honest",
    [
        ({"viewer": "member|lang=zh"}, {"viewer": "member", "lang": "zh"}),
        ({"viewer": "admin|v=4"}, {"viewer": "admin"}),
        ({"lang": "zh|p=sha256:0"}, {"lang": "zh"}),
        ({"lang": "%7C"}, {"lang": "|"}),
        ({"lang": '"2"'}, {"lang": "2"}),
    ],
)
def test_separators_in_values_cannot_forge_another_key(forged, honest):
    assert cache_key(**{**BASE, **forged}) != cache_key(**{**BASE, **honest})


def test_chinese_text_stays_readable_and_controls_are_escaped():
    key = cache_key(**BASE, lang="中文", note="a b\n")
    assert "lang=中文" in key and "note=a%20b%0A" in key


def test_prompt_text_never_in_the_key():
    prompt = "请用三句话总结，并忽略薪酬相关段落"
    key = cache_key(**BASE, private={"prompt": prompt})
    assert prompt not in key and "三句话" not in key
    assert key.endswith("|p=" + private_digest({"prompt": prompt}))
    assert cache_key(**BASE, private={"prompt": prompt + "。"}) != key


def test_private_digest_is_a_stable_value():
    # A fixed vector: the digest must not change between releases or processes.
    vector = hashlib.sha256(b"cachequeue.keys.private.v1\x006:prompt3:abc").hexdigest()
    assert private_digest({"prompt": "abc"}) == "sha256:" + vector[:32]


def test_private_name_and_value_boundaries_do_not_blur():
    assert private_digest({"ab": "c"}) != private_digest({"a": "bc"})
    assert private_digest({"a": "b", "c": "d"}) != private_digest({"a": "b\x00c:d"})


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "change, error, message",
    [
        ({"tenant": "1"}, TypeError, "tenant must be an int"),
        ({"document": "42"}, TypeError, "convert it with int"),
        ({"document": 42.0}, TypeError, "document must be an int"),
        ({"version": True}, TypeError, "version must be an int"),
        ({"version": None}, TypeError, "version must be an int"),
        ({"tenant": -1}, ValueError, "tenant must be >= 0"),
        ({"version": 0}, ValueError, "version must be >= 1"),
        ({"viewer": 20}, TypeError, "not a user id|permission view"),
        ({"viewer": None}, TypeError, "permission view"),
        ({"viewer": ""}, ValueError, "viewer must not be empty"),
        ({"lang": ""}, ValueError, "lang must not be empty"),
        ({"lang": None}, TypeError, "must be a str or an int"),
        ({"stream": True}, TypeError, "must be a str or an int"),
        ({"temperature": 0.2}, TypeError, "write floats as text"),
        ({"Lang": "zh"}, ValueError, "lowercase identifier"),
        ({"a|b": "zh"}, ValueError, "lowercase identifier"),
        ({"doc": 43}, ValueError, "reserved"),
        ({"p": "x"}, ValueError, "reserved"),
        ({"private": {}}, ValueError, "pass None"),
        ({"private": "prompt"}, TypeError, "mapping"),
        ({"private": {"prompt": 1}}, TypeError, "must be a str"),
        ({"private": {"": "x"}}, TypeError, "non-empty str"),
        ({"private": {1: "x"}}, TypeError, "non-empty str"),
        ({"lang": "zh\ud800"}, ValueError, "lone surrogate"),
        ({"private": {"prompt": "\udfff"}}, ValueError, "lone surrogate"),
    ],
)
def test_bad_input_gets_a_clear_error(change, error, message):
    with pytest.raises(error, match=message):
        cache_key(**{**BASE, **change})


@pytest.mark.parametrize("missing", ["tenant", "document", "version", "viewer"])
def test_every_fixed_dimension_is_required(missing):
    with pytest.raises(TypeError, match=missing):
        cache_key(**{k: v for k, v in BASE.items() if k != missing})


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "tenant=1|doc=42|v=3",
        "doc=42|tenant=1|v=3|view=x",
        "tenant=1|doc=42|v=3|view=x|view=y",
        "tenant=1|doc=42|v=3|view=%ZZ",
        "tenant=1|doc=42|v=3|view",
    ],
)
def test_parse_key_refuses_what_cache_key_cannot_make(bad):
    with pytest.raises(ValueError):
        parse_key(bad)
