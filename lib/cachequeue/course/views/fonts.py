"""Chinese text in matplotlib figures, on any laptop, without installing a font.

Matplotlib's own fonts (DejaVu) have no Chinese glyphs, and a learner's laptop may have no
CJK font that matplotlib can find (or no right to install one). Importing this module
registers Noto Sans SC, shipped in the `pylopdf-fonts-zh-cn` wheel (SIL Open Font License
1.1), and appends it to `font.family` as a fallback: Latin text keeps the default font, and
any glyph the default font lacks (Chinese, full-width punctuation) comes from Noto Sans SC.
The fallback applies to every figure drawn after the import, the learner's own included.
Every `course` module that draws figures imports this one.
"""

from __future__ import annotations

import matplotlib
import pylopdf_fonts_zh_cn
from matplotlib import font_manager

__all__ = ["CJK_FONT", "CJK_FONT_FILE"]

CJK_FONT_FILE = str(pylopdf_fonts_zh_cn.sans_path())
"""The font file (inside the installed wheel) that draws the Chinese glyphs."""

font_manager.fontManager.addfont(CJK_FONT_FILE)
CJK_FONT = font_manager.FontProperties(fname=CJK_FONT_FILE).get_name()
"""Its family name, "Noto Sans SC"."""

if CJK_FONT not in matplotlib.rcParams["font.family"]:
    matplotlib.rcParams["font.family"] = [*matplotlib.rcParams["font.family"], CJK_FONT]
