"""An editor's copy of a log that takes edits in time proportional to the edit, not the document.

pygls rebuilds the whole text for every incremental change (it splits the source into lines, writes
them all into a new buffer and joins it again), on the event loop: 500 keystrokes in a 100 MB log
cost minutes during which nothing, not even a ping, is answered. Here the document is kept as a list
of lines; an edit rewrites only the lines it touches (a list slice), and the full text is joined
again only when someone asks for it, once per diagnosis rather than once per keystroke.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types as t
from pygls.workspace import Workspace
from pygls.workspace.text_document import TextDocument

_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines breaks at


class LineDocument(TextDocument):
    """A TextDocument whose `lines` are the stored form and whose `source` is derived lazily."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lines: list[str] | None = None  # None: `_source` is current and the lines not yet split
        self._joined = True  # `_source` matches `_lines`

    def _line_list(self) -> list[str]:
        if self._lines is None:
            self._lines = (self._source or "").splitlines(True)
            self._joined = True
        return self._lines

    @property
    def source(self) -> str:
        if not self._joined:
            self._source = "".join(self._lines or ())
            self._joined = True
        return self._source or ""

    @property
    def lines(self) -> Sequence[str]:
        return self._line_list()

    def apply_change(self, change: t.TextDocumentContentChangeEvent) -> None:
        if isinstance(change, t.TextDocumentContentChangePartial) and self._is_sync_kind_incremental:
            self._apply_partial(change)
            return
        if self._is_sync_kind_none:
            return
        self._source, self._lines, self._joined = change.text, None, True

    def _apply_partial(self, change: t.TextDocumentContentChangePartial) -> None:
        lines = self._line_list()
        span = self._position_codec.range_from_client_units(lines, change.range)
        first, last = span.start.line, span.end.line
        if first > last:  # a reversed range changes nothing (as in pygls)
            return
        if not lines:  # the position codec clamps every position into the document, except here
            lines[:] = change.text.splitlines(True)
            self._joined = False
            return
        head, tail = lines[first][: span.start.character], lines[last][span.end.character:]
        start, stop = first, last + 1
        text = head + change.text + tail
        if text.startswith("\n") and start and lines[start - 1].endswith("\r"):
            start -= 1
            text = lines[start] + text
        if stop < len(lines) and (not text or text[-1] not in _BREAKS or text[-1] == "\r"):
            # the new text's last line runs on into the next one (or "\r" meets its "\n")
            text += lines[stop]
            stop += 1
        lines[start:stop] = text.splitlines(True)
        self._joined = False


class LineWorkspace(Workspace):
    """A pygls Workspace whose documents are LineDocuments."""

    @classmethod
    def replacing(cls, workspace: Workspace) -> LineWorkspace:
        """The same workspace (root, folders, sync kind and position encoding) with line documents."""
        copy = cls.__new__(cls)
        copy.__dict__.update(workspace.__dict__)
        return copy

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return LineDocument(doc_uri, source=source, version=version, language_id=language_id,
                            sync_kind=self._sync_kind, position_codec=self._position_codec)
