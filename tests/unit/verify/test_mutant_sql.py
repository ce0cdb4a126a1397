"""The mutants made from the real statements: each is the real text minus its safeguards."""

import pytest

from cachequeue.verify import variants


@pytest.mark.parametrize("name", sorted(variants._MUTANT_STATEMENTS))
def test_a_mutant_is_its_real_statement_without_the_safeguards(name):
    file, real, cuts = variants._MUTANT_STATEMENTS[name]
    real_sql, mutant = variants._REAL[file][real].sql, variants.mutant_sql(name)
    pairs = [cut if isinstance(cut, tuple) else (cut, "") for cut in cuts]
    assert len(real_sql) - len(mutant) == sum(len(old) - len(new) for old, new in pairs)
    assert all(old not in mutant for old, _ in pairs)
    rebuilt = mutant
    for old, new in reversed(pairs):
        rebuilt = rebuilt.replace(new, old, 1) if new else rebuilt
    if all(new for _, new in pairs):
        assert rebuilt == real_sql  # nothing else differs
    if file == "registry.sql" or real == "finish_many":
        assert "j.locked_until > (SELECT now FROM clock)" not in mutant  # each drops the expiry


def test_a_safeguard_the_real_statement_lost_is_an_error(monkeypatch):
    monkeypatch.setitem(variants._MUTANT_STATEMENTS, "gone",
                        ("queries.sql", "finish_many", (" AND j.no_such_column = 1",)))
    with pytest.raises(RuntimeError, match="is not once in finish_many"):
        variants.mutant_sql("gone")
