"""course.procs.fleet.tidy_paths: worker log lines shown in committed outputs name no folder
of the machine that ran them (the checkout's own paths become relative, others a name)."""

from cachequeue.course.procs.fleet import tidy_paths
from cachequeue.localserver import home


def test_paths_in_the_checkout_become_relative():
    line = (f'w1 reconnecting error="DatabaseUnavailable: connection to server on socket '
            f'\\"{home()}/.pgdata/throwaway/pg-a34ex5nz…\\" failed"')
    assert tidy_paths(line) == ('w1 reconnecting error="DatabaseUnavailable: connection to '
                                'server on socket \\".pgdata/throwaway/pg-a34ex5nz…\\" failed"')


def test_other_absolute_paths_keep_only_their_name():
    assert tidy_paths('socket "/tmp/cq-1a2b/.s.PGSQL.5432" and host=/var/run/pg') == (
        'socket ".s.PGSQL.5432" and host=pg')


def test_relative_paths_urls_and_plain_words_are_left_alone():
    text = "see docs/glossary.md, http://127.0.0.1:8000/jobs/7 and 3/4 of the jobs"
    assert tidy_paths(text) == text
