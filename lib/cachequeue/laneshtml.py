"""A lane chart (`cachequeue.lanes.Chart`) as one self-contained, offline HTML block.

    html = laneshtml.to_html(chart)      # a <div> with an inline SVG and a little inline script

The SVG is complete without JavaScript: every span, mark and band is drawn at its place,
and each carries a `<title>` (the browser shows it on hover, even where scripts are off or
stripped, e.g. an untrusted notebook in JupyterLab). The script adds what pays in a run of
hundreds of operations: the mouse wheel zooms the time axis around the pointer, dragging
pans it, a double click resets it, and hovering an item prints its details under the chart.
Nothing is loaded from anywhere (no URL at all, no CDN, no font file): the block works from a
file, on the course site and in a notebook output. Colours, markers and legend entries are
`lanes.KINDS`, the same as the static figure's. Text is escaped; ids are derived from the
chart's content, so the same chart gives the same bytes (a committed output stays stable).
"""

from __future__ import annotations

import hashlib
import math
from html import escape

from .checks import check_int
from .lanes import BAND_KINDS, KINDS, MARK_KINDS, SPAN_KINDS, Chart, layout

__all__ = ["page", "to_html"]

_LABEL_W, _ROW_H, _TOP, _AXIS_H, _RIGHT = 150, 30, 34, 40, 16
# SVG path of each matplotlib marker the vocabulary uses, centred on 0,0 (radius ~5).
_SHAPES = {"o": "M-5,0a5,5 0 1,0 10,0a5,5 0 1,0 -10,0Z", "v": "M-5,-4L5,-4L0,5Z",
           "D": "M0,-6L6,0L0,6L-6,0Z", "X": "M-5,-3L-3,-5L0,-2L3,-5L5,-3L2,0L5,3L3,5L0,2L-3,5L-5,3L-2,0Z",
           "x": "M-5,-5L5,5M5,-5L-5,5", "*": "M0,-6L1.8,-2L6,-2L2.6,1L4,6L0,3L-4,6L-2.6,1L-6,-2L-1.8,-2Z",
           "s": "M-4,-4H4V4H-4Z", "P": "M-2,-6H2V-2H6V2H2V6H-2V2H-6V-2H-2Z", "|": "M0,-11V11"}


def _num(value: float) -> str:
    return f"{value:.6g}"


# The script: positions are recomputed from each item's data-t0/data-t1/data-t (seconds)
# whenever the visible time range changes. __NAMES__ are filled in by `_script`.
_JS = """<script>(function(){
var root=document.getElementById("__UID__");if(!root)return;
var svg=root.querySelector("svg"),info=root.querySelector(".lanes-info"),L=__LEFT__,W=__W__;
var lo0=__LO__,hi0=__HI__,lo=lo0,hi=hi0;
function x(t){return L+(t-lo)/(hi-lo)*W;}
function nice(span){var p=Math.pow(10,Math.floor(Math.log10(span/6))),m=span/6/p;
 return p*(m<1.5?1:m<3.5?2:m<7.5?5:10);}
function draw(){
 svg.querySelectorAll("[data-t0]").forEach(function(e){
  var a=Math.max(x(+e.dataset.t0),L-2),b=Math.min(x(+e.dataset.t1),L+W+2);
  if(e.tagName==="line"){e.setAttribute("x1",x(+e.dataset.t0));e.setAttribute("x2",x(+e.dataset.t0));
   e.style.display=(x(+e.dataset.t0)<L||x(+e.dataset.t0)>L+W)?"none":"";return;}
  e.setAttribute("x",a);e.setAttribute("width",Math.max(b-a,+e.dataset.min||0));
  e.style.display=b<L||a>L+W?"none":"";});
 svg.querySelectorAll("[data-t]").forEach(function(e){var p=x(+e.dataset.t);
  e.setAttribute("transform","translate("+p+","+e.dataset.y+")");
  e.style.display=(p<L-1||p>L+W+1)?"none":"";});
 var g=svg.querySelector(".lanes-ticks");g.textContent="";var s=nice(hi-lo),
 t=Math.ceil(lo/s)*s,ns=svg.namespaceURI,y=+g.dataset.y;
 for(;t<=hi;t+=s){var ln=document.createElementNS(ns,"line");ln.setAttribute("x1",x(t));
  ln.setAttribute("x2",x(t));ln.setAttribute("y1",__TOP__);ln.setAttribute("y2",y);
  ln.setAttribute("class","grid");g.appendChild(ln);var tx=document.createElementNS(ns,"text");
  tx.setAttribute("x",x(t));tx.setAttribute("y",y+14);tx.setAttribute("text-anchor","middle");
  tx.textContent=+t.toPrecision(6);g.appendChild(tx);}}
function at(ev){var r=svg.getBoundingClientRect(),k=svg.viewBox.baseVal.width/r.width;
 return lo+((ev.clientX-r.left)*k-L)/W*(hi-lo);}
svg.addEventListener("wheel",function(ev){ev.preventDefault();var c=at(ev),
 f=ev.deltaY<0?0.8:1.25;lo=c-(c-lo)*f;hi=c+(hi-c)*f;draw();},{passive:false});
var drag=null;svg.addEventListener("mousedown",function(ev){drag=at(ev);});
window.addEventListener("mouseup",function(){drag=null;});
svg.addEventListener("mousemove",function(ev){if(drag===null)return;var d=drag-at(ev);
 lo+=d;hi+=d;draw();});
svg.addEventListener("dblclick",function(){lo=lo0;hi=hi0;draw();});
svg.addEventListener("mouseover",function(ev){var e=ev.target.closest("[data-info]");
 if(e)info.textContent=e.dataset.info;});
draw();})();</script>"""


def _script(uid: str, low: float, high: float, plot_w: int) -> str:
    values = {"__UID__": uid, "__LEFT__": str(_LABEL_W), "__W__": str(plot_w),
              "__LO__": _num(low), "__HI__": _num(high), "__TOP__": str(_TOP)}
    text = _JS
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def to_html(chart: Chart, *, width: int = 900) -> str:
    """The chart as one <div> (inline SVG + inline script), for `IPython.display.HTML` or a
    file. `width` is the SVG's width in pixels (it scales down to its container)."""
    check_int(width, "width", minimum=400, maximum=4000)
    order = chart.order()
    row = {lane: i for i, lane in enumerate(order)}
    low, high = chart.extent()
    pad = 0.02 * ((high - low) or 1.0)
    low, high = low - pad, high + pad
    plot_w = width - _LABEL_W - _RIGHT
    height = _TOP + _ROW_H * len(order) + _AXIS_H
    axis_y = _TOP + _ROW_H * len(order)

    def x(t: float) -> float:
        return _LABEL_W + (t - low) / (high - low) * plot_w

    def y(lane: str) -> float:
        return _TOP + _ROW_H * (row[lane] + 0.5)

    digest = hashlib.sha256(repr((chart.title, chart.spans, chart.marks, chart.bands, order,
                                  width)).encode()).hexdigest()[:12]
    uid = f"lanes-{digest}"
    out = [f'<div class="lanes-chart" id="{uid}" style="max-width:{width}px;'
           'font-size:12px">',  # the page's own font: the site's Chinese web font
           f'<svg viewBox="0 0 {width} {height}" width="100%" '
           f'role="img" aria-label="{escape(chart.title)}" style="user-select:none;cursor:grab">',
           f"<title>{escape(chart.title)}</title>",
           "<style>.grid{stroke:#ddd;stroke-width:1}text{font-size:11px}"
           "[data-info]:hover{opacity:.75}</style>",
           f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" style="font-size:14px">'
           f"{escape(chart.title)}</text>"]
    ticks = []
    step = _nice(high - low)
    t = step * -(-low // step)
    while t <= high:
        ticks.append(f'<line class="grid" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{_TOP}" '
                     f'y2="{axis_y}"/><text x="{x(t):.1f}" y="{axis_y + 14}" '
                     f'text-anchor="middle">{float(f"{t:.6g}"):g}</text>')
        t += step
    out.append(f'<g class="lanes-ticks" data-y="{axis_y}">{"".join(ticks)}</g>')
    out.append(f'<text x="{_LABEL_W + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">'
               f"{escape(chart.xlabel)}</text>")
    for lane in order:
        out.append(f'<text x="{_LABEL_W - 8}" y="{y(lane) + 4:.1f}" text-anchor="end" '
                   f'class="lane">{escape(chart.label(lane))}</text>')
    # Zoomed items are clipped to the plot: nothing is drawn over the lane labels.
    out.append(f'<clipPath id="{uid}-plot"><rect x="{_LABEL_W}" y="0" width="{plot_w}" '
               f'height="{height}"/></clipPath><g clip-path="url(#{uid}-plot)">')
    for band in chart.bands:
        kind = BAND_KINDS[band.kind]
        info = escape(band.detail or band.label or kind.legend)
        if band.end > band.start:
            out.append(f'<rect class="band" data-t0="{_num(band.start)}" data-t1="{_num(band.end)}" '
                       f'data-min="1" x="{x(band.start):.1f}" y="{_TOP}" '
                       f'width="{max(x(band.end) - x(band.start), 1):.1f}" height="{axis_y - _TOP}" '
                       f'fill="{kind.colour}" fill-opacity="0.18" data-info="{info}">'
                       f"<title>{info}</title></rect>")
        else:
            out.append(f'<line class="band" data-t0="{_num(band.start)}" data-t1="{_num(band.start)}" '
                       f'x1="{x(band.start):.1f}" x2="{x(band.start):.1f}" y1="{_TOP}" y2="{axis_y}" '
                       f'stroke="{kind.colour}" stroke-width="2" stroke-dasharray="2,3" '
                       f'data-info="{info}"><title>{info}</title></line>')
    slots = layout(chart)
    behind_first = sorted(range(len(chart.spans)), key=lambda i: chart.spans[i].kind != "pause")
    for i in behind_first:  # pauses first: SVG paints in order, so they lie behind the bars
        span = chart.spans[i]
        slot, count = slots[i]
        kind = SPAN_KINDS[span.kind]
        info = escape(span.detail or span.label or kind.legend)
        if span.kind == "pause":
            top, h = y(span.lane) - _ROW_H * 0.45, _ROW_H * 0.9
        else:
            h = _ROW_H * 0.6 / count
            top = y(span.lane) - _ROW_H * 0.3 + slot * h
        edge = ' stroke="red" stroke-width="2"' if span.highlight else ""
        out.append(f'<rect class="span {span.kind}" data-t0="{_num(span.start)}" '
                   f'data-t1="{_num(span.end)}" data-min="2" x="{x(span.start):.1f}" y="{top:.1f}" '
                   f'width="{max(x(span.end) - x(span.start), 2):.1f}" height="{h * 0.92:.1f}" '
                   f'fill="{kind.colour}"{" fill-opacity=0.6" if span.kind == "pause" else ""}'
                   f'{edge} data-info="{info}"><title>{info}</title></rect>')
    for mark in chart.marks:
        kind = MARK_KINDS[mark.kind]
        info = escape(mark.detail or mark.label or kind.legend)
        line = kind.shape in ("x", "|")
        paint = (f'fill="none" stroke="{kind.colour}" stroke-width="2"'
                 + (' stroke-dasharray="3,2"' if kind.shape == "|" else "")) if line \
            else f'fill="{kind.colour}"'
        out.append(f'<g class="mark {mark.kind}" data-t="{_num(mark.at)}" data-y="{y(mark.lane):.1f}" '
                   f'transform="translate({x(mark.at):.1f},{y(mark.lane):.1f})" data-info="{info}">'
                   f'<title>{info}</title><path d="{_SHAPES[kind.shape]}" {paint}/>'
                   f'<rect x="-6" y="-8" width="12" height="16" fill="transparent"/></g>')
    out.append("</g></svg>")
    legend = "".join(
        f'<span style="margin-right:12px;white-space:nowrap"><span style="display:inline-block;'
        f'width:10px;height:10px;background:{KINDS[k].colour};margin-right:4px"></span>'
        f"{escape(KINDS[k].legend)}</span>" for k in chart.kinds())
    out.append(f'<div class="lanes-legend">{legend}</div>')
    out.append('<div class="lanes-info" style="min-height:1.4em;color:#333">'
               "滚轮缩放时间轴，拖动平移，双击复原；鼠标停在条形或标记上看细节。</div>")
    out.append(_script(uid, low, high, plot_w))
    out.append("</div>")
    return "\n".join(out)


def _nice(span: float) -> float:
    """A round tick step giving about six ticks over `span`."""
    raw = (span or 1.0) / 6
    power = 10 ** math.floor(math.log10(raw))
    m = raw / power
    return power * (1 if m < 1.5 else 2 if m < 3.5 else 5 if m < 7.5 else 10)



def page(chart: Chart, *, width: int = 900) -> str:
    """A standalone HTML page (UTF-8) holding `to_html(chart)`: open it from a file (its
    icon is empty and inline, so not even a favicon is asked for)."""
    return (f'<!DOCTYPE html><html lang="zh-CN"><head><meta charset="utf-8"><title>'
            f'{escape(chart.title)}</title><link rel="icon" href="data:,"></head><body>'
            f"{to_html(chart, width=width)}</body></html>\n")
