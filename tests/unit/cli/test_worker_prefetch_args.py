"""`cachequeue worker --prefetch N`: bad values are one line on stderr and exit 2, before any
database access; a good one reaches the Worker."""

import pytest
from test_cli import GOOD, assert_usage_error, no_database  # noqa: F401 (no_database is autouse: a tripwire here too)

from cachequeue import cli


@pytest.mark.parametrize("argv, message", [
    (GOOD + ["--prefetch", "-1"], "prefetch must be >= 0"),
    (GOOD + ["--prefetch", "5001"], "prefetch must be <= 5000"),
    (GOOD + ["--prefetch", "many"], "invalid int value: 'many'"),
    (GOOD + ["--prefetch", "1e3"], "invalid int value: '1e3'"),
    (GOOD + ["--prefetch", "10", "--heartbeat", "0"], "prefetch needs heartbeats"),
    (GOOD + ["--prefetch", "10", "--fair"], "prefetch and fair do not go together"),
])
def test_bad_prefetch_is_one_line_and_exit_2(capsys, argv, message):
    assert_usage_error(capsys, argv, message)


def test_a_good_prefetch_reaches_the_worker():
    from cachequeue.cli import worker

    args = cli.build_parser().parse_args(GOOD + ["--prefetch", "500", "--batch", "1000"])
    run = worker.prepare(args)
    [made] = [c.cell_contents for c in run.__closure__
              if type(c.cell_contents).__name__ == "Worker"]
    assert (made._prefetch, made._batch) == (500, 1000)
    args = cli.build_parser().parse_args(GOOD)
    assert args.prefetch == 0, "off unless asked for"
