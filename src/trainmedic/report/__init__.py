"""Renderers: each turns a Diagnosis into text for one audience. They render; they never decide.

Every output format lives in one module of this package with a `render(diagnosis, out, color)`
function, and is listed once in `_MODULES`: the commands' `--format` choices, the live banners and
the web's report all come from `FORMATS`, so a new format is a new module plus one line here.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable
from typing import TextIO

from trainmedic.model import Diagnosis

Renderer = Callable[[Diagnosis, TextIO, bool], None]

# format name -> the module that renders it (imported on first use: rich costs time to load)
_MODULES = {
    "text": "trainmedic.report.text",
    "verbose": "trainmedic.report.verbose",
    "json": "trainmedic.report.jsonout",
    "markdown": "trainmedic.report.markdown",
    "sarif": "trainmedic.report.sarif",
    "github": "trainmedic.report.github",
}
DEFAULT_FORMAT = "text"


def _lazy(module: str) -> Renderer:
    def render(d: Diagnosis, out: TextIO, color: bool) -> None:
        importlib.import_module(module).render(d, out, color)

    return render


FORMATS: dict[str, Renderer] = {name: _lazy(module) for name, module in _MODULES.items()}


def rendered(d: Diagnosis, fmt: str, color: bool = False) -> str:
    """The report in format `fmt`, as a string."""
    buf = io.StringIO()
    FORMATS[fmt](d, buf, color)
    return buf.getvalue()
