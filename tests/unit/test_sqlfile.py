import pytest

from cachequeue import sqlfile


def test_parses_named_blocks_with_purpose(tmp_path, monkeypatch):
    text = "-- name: one\n-- Count things.\nSELECT 1;\n\n-- name: two\nSELECT %(x)s;\n"
    monkeypatch.setattr(sqlfile, "read", lambda filename: text)
    sqlfile.load.cache_clear()
    try:
        queries = sqlfile.load("fake.sql")
    finally:
        sqlfile.load.cache_clear()
    assert list(queries) == ["one", "two"]
    assert queries["one"].purpose == "Count things."
    assert queries["one"].sql == "SELECT 1;"
    assert queries["two"].purpose == ""
    assert str(queries["two"]) == "SELECT %(x)s;"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- name: a\nSELECT 1;\n-- name: a\nSELECT 2;\n", "defined twice"),
        ("-- name: a\n-- Only a purpose.\n", "empty"),
    ],
)
def test_rejects_duplicate_and_empty_blocks(monkeypatch, text, message):
    monkeypatch.setattr(sqlfile, "read", lambda filename: text)
    sqlfile.load.cache_clear()
    try:
        with pytest.raises(ValueError, match=message):
            sqlfile.load("fake.sql")
    finally:
        sqlfile.load.cache_clear()


def test_every_shipped_query_file_parses():
    from importlib import resources

    files = [p.name for p in resources.files("cachequeue").joinpath("sql").iterdir()
             if p.name.endswith(".sql")]
    assert "schema.sql" in files
    for name in files:
        if "-- name:" in sqlfile.read(name):
            assert sqlfile.load(name), name
