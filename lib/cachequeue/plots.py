"""Matplotlib figures for the notebooks. Each function returns the Figure it draws."""

from __future__ import annotations

__all__: list[str] = []
