from importlib import resources

import pytest

from cachequeue import sqlfile
from cachequeue.course import ROOMS

PARTS = ("cachequeue", "cachequeue.cache", "cachequeue.queue", "cachequeue.shared",
         "cachequeue.service", *(f"cachequeue.course.{room}" for room in ROOMS))


def test_parses_named_blocks_with_purpose():
    text = "-- name: one\n-- Count things.\nSELECT 1;\n\n-- name: two\nSELECT %(x)s;\n"
    queries = sqlfile.parse(text)
    assert list(queries) == ["one", "two"]
    assert queries["one"].purpose == "Count things."
    assert queries["one"].sql == "SELECT 1;"
    assert queries["two"].purpose == ""
    assert str(queries["two"]) == "SELECT %(x)s;"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "fake.sql: query 'a' is defined twice"),
        ("-- name: a\n-- Only a purpose.\n", "fake.sql: query 'a' is empty"),
    ],
)
def test_rejects_duplicate_and_empty_blocks(text, message):
    with pytest.raises(ValueError, match=message):
        sqlfile.parse(text, "fake.sql")


def shipped() -> list[tuple[str, str]]:
    found = []
    for package in PARTS:
        folder = resources.files(package).joinpath("sql")
        if folder.is_dir():
            found += [(package, p.name) for p in folder.iterdir() if p.name.endswith(".sql")]
    return sorted(found)


def test_every_shipped_query_file_parses():
    files = shipped()
    assert ("cachequeue.queue", "queries.sql") in files
    assert ("cachequeue", "clock.sql") in files
    for package, name in files:
        if "-- name:" in sqlfile.read(package, name):
            assert sqlfile.load(package, name), name


def test_load_reads_a_file_once():
    first = sqlfile.load("cachequeue.queue", "queries.sql")
    assert sqlfile.load("cachequeue.queue", "queries.sql") is first
    assert "claim" in first


def test_a_file_is_one_mapping_that_names_what_it_has():
    queries = sqlfile.parse("-- name: one\nSELECT 1;\n-- name: two\nSELECT 2;\n", "fake.sql")
    assert queries("one") is queries["one"] and len(queries) == 2
    with pytest.raises(KeyError, match=r"no query 'three' in fake.sql; it has \['one', 'two'\]"):
        queries("three")
