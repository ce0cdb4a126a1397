"""A lane chart as an interactive view in a notebook, beside its static image.

    chart = redelivery.chaos_chart(result)            # any `views.eventlanes.Chart`
    display(interactive.html(chart))                  # zoom, pan, hover (offline HTML)
    fig = interactive.static(chart)                   # the same chart as a PNG figure

The HTML is `cachequeue.laneshtml.to_html`: an inline SVG with a little inline script, no
URL, no CDN, no new dependency, so it works in JupyterLab, on the course site and from a
file. Keep the static figure beside it: the site's readers without JavaScript, its search
and strict nbval (which ignores pixels) see that one; the cell asserts what both show.
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import HTML
from matplotlib.figure import Figure

from ...laneshtml import page, to_html
from .eventlanes import Chart, draw_chart

__all__ = ["html", "save", "static"]


def html(chart: Chart, *, width: int = 900) -> HTML:
    """The chart as an `IPython.display.HTML` object (show it with `display`)."""
    return HTML(to_html(chart, width=width))


def static(chart: Chart, *, width: float = 9.0) -> Figure:
    """The same chart as a matplotlib Figure, with the legend of the kinds it uses."""
    return draw_chart(chart, width=width, legend=True, row_height=0.5)


def save(chart: Chart, path: str | Path, *, width: int = 900) -> Path:
    """Write the chart as a standalone HTML page (UTF-8) and return its path."""
    path = Path(path)
    path.write_text(page(chart, width=width), encoding="utf-8")
    return path
