"""course.procs.overload (chapter 07's overload): with the service's calls in flight held
behind a SHARE lock, one more submit is shed at once; the held ones go through after."""

from servicekit import auth

from cachequeue.course.procs import overload


def test_one_more_submit_is_shed_while_the_others_are_held(make_live, schema, conn):
    live = make_live(pool_size=2, max_in_flight=3, lock_timeout=30, statement_timeout=30,
                     pool_timeout=30)
    seen = overload.one_more(schema, api_url=live.url, metrics_url=live.metrics_url,
                             headers=auth(11), body={"kind": "noop", "run_after": 3600},
                             held=3)
    assert (seen["status"], seen["code"], seen["retry_after"]) == (503, "overloaded", "1")
    assert seen["seconds"] < 2 and seen["held"] == [202, 202, 202]
    assert seen["shed_total"] == 1.0
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 3


def test_bad_arguments_are_refused_before_anything_starts(make_live, schema):
    import pytest

    with pytest.raises(ValueError):
        overload.one_more(schema, api_url="http://127.0.0.1:9", metrics_url="http://127.0.0.1:9",
                          headers={}, body={}, held=0)
    with pytest.raises(TypeError):
        overload.one_more(1, api_url="", metrics_url="", headers={}, body={})
