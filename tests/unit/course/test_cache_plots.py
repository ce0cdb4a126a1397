"""The notebooks' figures draw exactly the data they are given, labelled in Chinese that
really renders (glyphs from the Noto Sans SC wheel, not tofu boxes)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ft2font import FT2Font

from cachequeue.course.views import plots
from cachequeue.course.views.plots import (
    plot_hit_ratio_vs_ttl,
    plot_loads_vs_readers,
    plot_retry_times,
)

_HAN = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


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


def _figures() -> list[Figure]:
    return [
        plot_loads_vs_readers([1, 10], {"合并请求": [1, 1], "不合并": [1, 10]}),
        plot_hit_ratio_vs_ttl([1, 2], {"FIFO，100 个条目": [0.2, 0.4]}),
        plot_retry_times({"不加抖动": [8.0, 8.0], "全抖动": [1.5, 7.0]}, width=1.0),
    ]


def _labels(fig: Figure) -> list[str]:
    texts = []
    for ax in fig.axes:
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
    return [t for t in texts if t]


def test_titles_and_axis_labels_are_in_chinese():
    for fig in _figures():
        labels = _labels(fig)
        assert labels
        for label in labels:
            assert _HAN.search(label), f"not Chinese: {label!r}"


def test_the_chinese_font_comes_from_the_wheel_and_is_a_fallback():
    assert Path(plots.CJK_FONT_FILE).is_file()
    assert "pylopdf_fonts_zh_cn" in Path(plots.CJK_FONT_FILE).parts
    assert plots.CJK_FONT == "Noto Sans SC"
    found = font_manager.findfont(font_manager.FontProperties(family=plots.CJK_FONT),
                                  fallback_to_default=False)
    assert Path(found) == Path(plots.CJK_FONT_FILE)
    import matplotlib

    families = matplotlib.rcParams["font.family"]
    assert families[-1] == plots.CJK_FONT and len(families) > 1, "Latin text keeps its font"


def test_the_font_has_a_glyph_for_every_character_the_figures_write():
    font = FT2Font(plots.CJK_FONT_FILE)
    chars = {c for fig in _figures() for text in _labels(fig) + [
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        for c in text if _HAN.match(c)}
    assert len(chars) > 20
    assert [c for c in sorted(chars) if font.get_char_index(ord(c)) == 0] == []


def _render(text: str) -> np.ndarray:
    fig = Figure(figsize=(3, 0.8), dpi=100)
    fig.text(0.02, 0.25, text, fontsize=22)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., 0].copy()


def test_chinese_renders_as_distinct_glyphs_not_tofu():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)"
        lease, token = _render("租约"), _render("令牌")
        for fig in _figures():
            FigureCanvasAgg(fig).draw()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tofu = _render("\U000f0000\U000f0001")  # private-use code points: no font draws them
    assert (lease < 128).sum() > 50, "the glyphs left ink on the canvas"
    assert not np.array_equal(lease, token), "two different words draw differently"
    assert not np.array_equal(lease, tofu)


def test_without_the_fallback_the_same_text_would_be_tofu():
    """The check above can fail: DejaVu Sans alone has no glyph for these characters."""
    fig = Figure(figsize=(3, 0.8), dpi=100)
    fig.text(0.02, 0.25, "租约令牌", fontsize=22, family="DejaVu Sans")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FigureCanvasAgg(fig).draw()
    assert any("missing from font" in str(w.message) for w in caught)
