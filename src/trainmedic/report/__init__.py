"""Renderers: each turns a Diagnosis into text for one audience. They render; they never decide."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from trainmedic.model import Diagnosis

Renderer = Callable[[Diagnosis, TextIO, bool], None]


def _text(d: Diagnosis, out: TextIO, color: bool) -> None:
    from trainmedic.report.text import render

    render(d, out, color)


def _json(d: Diagnosis, out: TextIO, color: bool) -> None:
    from trainmedic.report.jsonout import render

    render(d, out, color)


def _markdown(d: Diagnosis, out: TextIO, color: bool) -> None:
    from trainmedic.report.markdown import render

    render(d, out, color)


FORMATS: dict[str, Renderer] = {"text": _text, "json": _json, "markdown": _markdown}
