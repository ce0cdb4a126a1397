"""The cache chapter's figures draw exactly the data they are given."""

from __future__ import annotations

import pytest

from cachequeue.course.plots import plot_hit_ratio_vs_ttl, plot_loads_vs_readers


def test_loads_vs_readers_draws_one_line_per_cache():
    fig = plot_loads_vs_readers([1, 10, 100], {"with": [1, 1, 1], "without": [1, 10, 100]})
    (ax,) = fig.axes
    lines = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}
    assert lines == {"with": [1, 1, 1], "without": [1, 10, 100]}
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_hit_ratio_vs_ttl_keeps_the_axis_between_zero_and_one():
    fig = plot_hit_ratio_vs_ttl([1, 2, 4], {"fifo": [0.1, 0.5, 0.9]})
    (ax,) = fig.axes
    assert list(ax.get_lines()[0].get_xdata()) == [1, 2, 4]
    assert ax.get_ylim() == (0, 1)


@pytest.mark.parametrize("args", [([], {"a": []}), ([1], {}), ([1, 2], {"a": [1]})])
def test_mismatched_or_empty_series_are_refused(args):
    with pytest.raises(ValueError):
        plot_loads_vs_readers(*args)
    with pytest.raises(ValueError):
        plot_hit_ratio_vs_ttl(*args)
