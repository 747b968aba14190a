"""`trainmedic lsp`: diagnostics, hovers, code actions and commands for training logs, over stdio.

The message loop never diagnoses: diagnoses run one at a time on a worker thread (the pattern
database's scratch space is not shared between threads) with a sequential reader, edits are debounced,
and a newer edit or a close cancels the running diagnosis at its next block. Hovers and code actions
answer from the last finished diagnosis, so a 1 GB log never blocks them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import unquote

from lsprotocol import types as t
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from trainmedic import __version__
from trainmedic.catalog import Library, load_library
from trainmedic.lsp.document import LineWorkspace
from trainmedic.lsp.framing import MAX_MESSAGE, GuardedInput, invalid_params_protocol
from trainmedic.lsp.marks import (
    DIAGNOSING,
    Analysis,
    Cancelled,
    CancelToken,
    Document,
    Encoding,
    Mark,
    Severity,
    analyse,
    document_name,
    explain_text,
    is_log_document,
    page_url,
    units,
    uri_to_path,
)
from trainmedic.util.text import rank_suffix

log = logging.getLogger("trainmedic.lsp")
R = TypeVar("R")

COPY_VERIFY = "trainmedic.copyVerify"
OPEN_PAGE = "trainmedic.openEncyclopedia"
DIAGNOSE_TEXT = "trainmedic.diagnoseText"
DIAGNOSE_FILE = "trainmedic.diagnoseFile"

_SEVERITY: dict[Severity, t.DiagnosticSeverity] = {
    "error": t.DiagnosticSeverity.Error,
    "warning": t.DiagnosticSeverity.Warning,
    "information": t.DiagnosticSeverity.Information,
    "hint": t.DiagnosticSeverity.Hint,
}


@dataclass
class EditorSettings:
    """What a client may set (initializationOptions or the `trainmedic` configuration section)."""

    site_url: str | None = None  # a locally built site (`trainmedic site`): directory or URL
    debounce_s: float = 0.3
    disk_threshold: int = 8 << 20  # documents at least this long are read from disk when unmodified
    all_documents: bool = False
    library_dir: Path | None = None  # a library being written, instead of the bundled one

    def update(self, raw: object) -> None:
        if not isinstance(raw, dict):
            return
        section = raw.get("trainmedic")
        values: dict[str, Any] = section if isinstance(section, dict) else raw
        if "siteUrl" in values:
            self.site_url = str(values["siteUrl"] or "") or None
        if isinstance(values.get("debounceMs"), (int, float)):
            self.debounce_s = max(0.0, float(values["debounceMs"]) / 1000)
        if isinstance(values.get("diskThresholdBytes"), int):
            self.disk_threshold = max(0, values["diskThresholdBytes"])
        if isinstance(values.get("allDocuments"), bool):
            self.all_documents = values["allDocuments"]


@dataclass
class DocState:
    """One open document: its newest generation, the work in flight and the last finished result."""

    uri: str
    name: str
    dirty: bool = False  # edited since open or save: the text on disk is not what the editor shows
    generation: int = 0
    task: asyncio.Task[None] | None = None
    token: CancelToken | None = None
    result: Analysis | None = None
    result_generation: int = -1
    closed: bool = False
    error: str | None = None  # why the newest diagnosis did not finish
    waiters: list[asyncio.Future[None]] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.result_generation != self.generation


class TrainmedicServer(LanguageServer):
    """A pygls server that keeps per-document state and one diagnosis worker."""

    def __init__(self, settings: EditorSettings | None = None) -> None:
        super().__init__("trainmedic", __version__, text_document_sync_kind=t.TextDocumentSyncKind.Incremental,
                         protocol_cls=invalid_params_protocol())
        self.settings = settings or EditorSettings()
        self.docs: dict[str, DocState] = {}
        self.asked: set[str] = set()  # documents the client asked about, whatever their name
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainmedic-diagnose")
        self._library: Library | None = None
        self._library_stamp = 0

    # ------------------------------------------------------------ worker

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON gets the JSON-RPC parse error (id null) instead of a pop-up."""
        if isinstance(error, json.JSONDecodeError):
            from pygls.exceptions import JsonRpcParseError

            # JSON-RPC answers an unreadable message with id null; pygls's annotation forgets that case
            self.protocol._send_response(None, error=JsonRpcParseError().to_response_error())  # type: ignore[arg-type]
            return
        super().report_server_error(error, source)

    async def off_loop(self, fn: Callable[[], R]) -> R:
        """Run `fn` on the diagnosis worker so the message loop stays free (the library loads there too)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn)

    @property
    def library(self) -> Library:
        """The bundled library, or `--library DIR`, reloaded when its files change so that a library
        author sees an edited entry at the next diagnosis. Call it on the worker: loading parses YAML."""
        folder = self.settings.library_dir
        if folder is None:
            return load_library()
        stamp = max((p.stat().st_mtime_ns for p in folder.glob("*/*.*")), default=0)
        if self._library is None or stamp != self._library_stamp:
            self._library, self._library_stamp = load_library(folder), stamp
        return self._library

    def cancel_all(self) -> None:
        """Stop work in flight; called on shutdown and when the connection ends."""
        for state in self.docs.values():
            if state.token is not None:
                state.token.cancel()
            if state.task is not None:
                state.task.cancel()
        self.executor.shutdown(wait=False, cancel_futures=True)

    @property
    def encoding(self) -> Encoding:
        kind = str(getattr(self.workspace.position_encoding, "value", self.workspace.position_encoding) or "")
        return "utf-8" if kind == "utf-8" else "utf-32" if kind == "utf-32" else "utf-16"

    # ------------------------------------------------------------ documents

    def wants(self, uri: str, language_id: str | None) -> bool:
        asked = uri in self.asked or unquote(uri) in {unquote(u) for u in self.asked}
        return self.settings.all_documents or asked or is_log_document(uri, language_id)

    def track(self, uri: str) -> DocState:
        state = self.docs.get(uri)
        if state is None:
            state = self.docs[uri] = DocState(uri, document_name(uri))
        return state

    def schedule(self, state: DocState, delay: float) -> None:
        """Start a new diagnosis of `state` after `delay`, abandoning the one in flight."""
        state.generation += 1
        if state.token is not None:
            state.token.cancel()
        if state.task is not None and not state.task.done():
            state.task.cancel()
        state.task = asyncio.ensure_future(self._diagnose(state, state.generation, delay))

    def forget(self, uri: str) -> None:
        state = self.docs.pop(uri, None)
        if state is None:
            return
        state.closed = True
        state.generation += 1
        if state.token is not None:
            state.token.cancel()
        if state.task is not None:
            state.task.cancel()
        self._wake(state)
        self.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def _document(self, state: DocState) -> Document:
        """Read big, unmodified files from disk: the editor's copy would have to be encoded and
        copied, and the reader streams a file in bounded memory."""
        doc = self.workspace.get_text_document(state.uri)
        source = doc.source
        path = uri_to_path(state.uri)
        if path is not None and not state.dirty and len(source) >= self.settings.disk_threshold \
                and Path(path).is_file():
            return Document(state.name, path=path)
        return Document(state.name, text=source)

    async def _diagnose(self, state: DocState, generation: int, delay: float) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        if state.closed or generation != state.generation:
            return
        doc = self._document(state)
        token = state.token = CancelToken()
        size = Path(doc.path).stat().st_size if doc.path else len(doc.text or "")
        where = f"{Path(state.name).name} from disk" if doc.path else Path(state.name).name
        progress = await self._progress(where, size, token)
        started = time.monotonic()
        try:
            analysis = await self.off_loop(lambda: analyse(doc, self.library, token=token, on_bytes=progress.add))
        except Cancelled:
            progress.end("cancelled")
            if not state.closed and generation == state.generation:  # the user cancelled the progress
                self._settle(state, generation, "cancelled")
            return
        except asyncio.CancelledError:
            token.cancel()
            progress.end("cancelled")
            raise
        except Exception as exc:  # an unreadable file must not take the server down
            log.warning("diagnosing %s failed: %s", state.name, exc)
            progress.end(f"failed: {exc}")
            self.window_log_message(t.LogMessageParams(type=t.MessageType.Warning,
                                                       message=f"trainmedic: {state.name}: {exc}"))
            if not state.closed and generation == state.generation:
                self._settle(state, generation, str(exc))
            return
        if state.closed or generation != state.generation:
            progress.end("superseded by a newer edit")
            return
        p = analysis.diagnosis.primary
        log.debug("diagnosed %s (%s, %d bytes) in %.2fs: %s", state.name, analysis.source, size,
                  time.monotonic() - started, p.id if p else "healthy")
        progress.end(f"{p.id}{rank_suffix(p.rank)}" if p else "no failure found")
        state.result = analysis
        self._settle(state, generation, None)
        self.publish(state)

    def _settle(self, state: DocState, generation: int, error: str | None) -> None:
        state.result_generation, state.error = generation, error
        self._wake(state)

    def _wake(self, state: DocState) -> None:
        for fut in state.waiters:
            if not fut.done():
                fut.set_result(None)
        state.waiters.clear()

    async def settled(self, state: DocState) -> Analysis | None:
        """The diagnosis of the newest generation, once it is done (None if the document closed)."""
        while state.busy and not state.closed:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            state.waiters.append(fut)
            await fut
        return state.result

    # ------------------------------------------------------------ progress

    async def _progress(self, title: str, size: int, token: CancelToken) -> _Progress:
        window = self.client_capabilities.window
        if window is None or not window.work_done_progress:
            return _Progress(self, None, size, asyncio.get_running_loop())
        name = f"trainmedic-{uuid.uuid4().hex}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(name), 2.0)
        except Exception:  # a client that cannot show progress still gets diagnostics
            return _Progress(self, None, size, asyncio.get_running_loop())
        self.work_done_progress.begin(name, t.WorkDoneProgressBegin(
            title="trainmedic", message=f"diagnosing {title}", percentage=0, cancellable=True))
        fut = self.work_done_progress.tokens.get(name)
        if isinstance(fut, Future):
            fut.add_done_callback(lambda f: token.cancel() if f.cancelled() else None)
        return _Progress(self, name, size, asyncio.get_running_loop())

    # ------------------------------------------------------------ diagnostics

    def _range(self, analysis: Analysis, mark: Mark) -> t.Range:
        span = analysis.span(mark)
        return t.Range(t.Position(span.line, 0), t.Position(span.line, units(span.text, self.encoding)))

    def diagnostics(self, state: DocState, analysis: Analysis) -> list[t.Diagnostic]:
        out: list[t.Diagnostic] = []
        for mark in analysis.marks:
            url = page_url(self.settings.site_url, mark.finding)
            related = None
            if mark.related is not None:
                span = analysis.spans.get(mark.related)
                line = span.line if span else mark.related - 1
                end = units(span.text, self.encoding) if span else 0
                related = [t.DiagnosticRelatedInformation(
                    location=t.Location(uri=state.uri, range=t.Range(t.Position(line, 0), t.Position(line, end))),
                    message="the initiating failure")]
            out.append(t.Diagnostic(
                range=self._range(analysis, mark),
                message=mark.message,
                severity=_SEVERITY[mark.severity],
                code=mark.finding,
                code_description=t.CodeDescription(href=url) if url else None,
                source="trainmedic",
                related_information=related,
                data={"kind": mark.kind, "finding": mark.finding},
            ))
        return out

    def publish(self, state: DocState) -> None:
        if state.result is None:
            return
        self.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=state.uri, diagnostics=self.diagnostics(state, state.result)))

    # ------------------------------------------------------------ hover and code actions

    def hover(self, params: t.HoverParams) -> t.Hover | None:
        state = self.docs.get(params.text_document.uri)
        if state is None:
            return None
        analysis = state.result
        if analysis is None:
            if state.busy:
                return t.Hover(t.MarkupContent(t.MarkupKind.Markdown, DIAGNOSING))
            if state.error is not None:
                why = f"trainmedic could not diagnose this log: {state.error}"
                return t.Hover(t.MarkupContent(t.MarkupKind.PlainText, why))
            return None
        marks = analysis.marks_at(params.position.line)
        if not marks:
            return None
        texts = list(dict.fromkeys(m.hover for m in marks))
        body = "\n\n---\n\n".join(texts)
        if state.busy:
            body += "\n\n_From the previous diagnosis; a newer one is running._"
        return t.Hover(t.MarkupContent(t.MarkupKind.Markdown, body), self._range(analysis, marks[0]))

    def code_actions(self, params: t.CodeActionParams) -> list[t.CodeAction | t.Command] | None:
        only = params.context.only
        if only and not any(str(getattr(k, "value", k)).startswith("quickfix") for k in only):
            return None
        state = self.docs.get(params.text_document.uri)
        if state is None or state.result is None:
            return None
        marks = state.result.marks_at(params.range.start.line, params.range.end.line)
        actions: list[t.CodeAction] = []
        offered: set[tuple[str, str]] = set()  # (command, argument): each action once, however many marks
        for mark in marks:
            diags = [d for d in params.context.diagnostics if d.source == "trainmedic" and d.code == mark.finding]
            offers = [(COPY_VERIFY, cmd, f"trainmedic: copy the verify command `{cmd}`") for cmd in mark.verify]
            offers += [(OPEN_PAGE, page, f"trainmedic: open the encyclopedia page for {page}") for page in mark.pages]
            for command, argument, title in offers:
                if (command, argument) in offered:
                    continue
                offered.add((command, argument))
                actions.append(t.CodeAction(title=title, kind=t.CodeActionKind.QuickFix, diagnostics=diags or None,
                                            command=t.Command(title=title, command=command, arguments=[argument])))
        if not actions:
            return None
        text_caps = self.client_capabilities.text_document
        code_caps = text_caps.code_action if text_caps is not None else None
        if code_caps is None or code_caps.code_action_literal_support is None:
            # LSP before 3.8: clients take bare commands only.
            return [a.command for a in actions if a.command is not None]
        return list(actions)

    # ------------------------------------------------------------ commands

    async def diagnose_text(self, text: str, name: str) -> dict[str, Any]:
        analysis = await self.off_loop(lambda: analyse(Document(name, text=text), self.library))
        return analysis.diagnosis.to_json()

    async def diagnose_uri(self, uri: str) -> dict[str, Any]:
        """An open document: its (new) diagnosis, now also published; a closed file: read from disk."""
        if ":" not in uri.partition("/")[0]:  # a path, not a URI
            uri = Path(uri).expanduser().resolve().as_uri()
        # Clients and pathlib escape URIs differently (`%3A`, `%20`): use the client's spelling.
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is not None:
            uri = doc.uri
        self.asked.add(uri)
        if doc is not None:
            state = self.docs.get(uri)
            if state is None:
                state = self.track(uri)
                self.schedule(state, 0)
            analysis = await self.settled(state)
            if state.error is not None:
                raise ValueError(f"{state.name}: {state.error}")
            if analysis is not None:
                return analysis.diagnosis.to_json()
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(f"{uri}: not open and not a file")
        try:
            regular = stat.S_ISREG(Path(path).stat().st_mode)
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        if not regular:  # a FIFO or a device would block the server's only worker for good
            raise ValueError(f"{path}: not a regular file")
        # An explicit request for a file that is not open: use every core.
        analysis = await self.off_loop(lambda: analyse(Document(path, path=path), self.library, parallel=True))
        return analysis.diagnosis.to_json()

    async def open_page(self, ident: str, show: bool) -> dict[str, Any]:
        """The page of a finding: a local site's URL when configured, else `trainmedic explain` text
        (written to a temporary file that the client is asked to show)."""
        try:
            text = await self.off_loop(lambda: explain_text(self.library, ident))
        except KeyError as exc:
            raise ValueError(f"unknown id {ident!r}") from exc
        url = page_url(self.settings.site_url, ident)
        result: dict[str, Any] = {"id": ident, "url": url, "text": text}
        if not show:
            return result
        window = self.client_capabilities.window
        can_show = window is not None and window.show_document is not None and window.show_document.support
        if url and can_show:
            await self.window_show_document_async(t.ShowDocumentParams(uri=url, external=True))
        elif can_show:
            folder = Path(tempfile.gettempdir()) / "trainmedic-explain"
            folder.mkdir(exist_ok=True)
            page = folder / (ident.replace("/", "--") + ".txt")
            page.write_text(text, encoding="utf-8")
            await self.window_show_document_async(t.ShowDocumentParams(uri=page.as_uri(), take_focus=True))
            result["file"] = str(page)
        else:
            self.window_show_message(t.ShowMessageParams(t.MessageType.Info, text[:2000]))
        return result


class _Progress:
    """Work-done progress fed from the worker thread; reports cross to the loop thread-safely."""

    def __init__(self, server: TrainmedicServer, token: str | None, size: int, loop: asyncio.AbstractEventLoop) -> None:
        self.server, self.token, self.size, self.loop = server, token, max(size, 1), loop
        self.done = 0
        self.shown = 0
        self.ended = False
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.token is None:
            return
        with self.lock:
            self.done += n
            pct = min(99, self.done * 100 // self.size)
            if pct < self.shown + 5:
                return
            self.shown = pct
        self.loop.call_soon_threadsafe(self._report, pct)

    def _report(self, pct: int) -> None:
        if self.token is not None and not self.ended:
            self.server.work_done_progress.report(self.token, t.WorkDoneProgressReport(percentage=pct))

    def end(self, message: str) -> None:
        if self.token is None or self.ended:
            return
        self.ended = True
        self.server.work_done_progress.end(self.token, t.WorkDoneProgressEnd(message=message))


def create_server(settings: EditorSettings | None = None) -> TrainmedicServer:
    """Build the server with its features; separate from `serve` so tests can inspect it."""
    server = TrainmedicServer(settings)

    @server.feature(t.INITIALIZE)
    def initialize(ls: TrainmedicServer, params: t.InitializeParams) -> None:
        ls.settings.update(params.initialization_options)
        # pygls has just made the workspace; its documents would rebuild the whole text per edit
        # (pygls offers no hook for the document class, hence the private attribute)
        ls.protocol._workspace = LineWorkspace.replacing(ls.workspace)

    @server.feature(t.INITIALIZED)
    def initialized(ls: TrainmedicServer, _params: t.InitializedParams) -> None:
        # Compile the pattern database now, on the worker, so the first diagnosis is quick.
        from trainmedic.lsp.marks import warm

        ls.executor.submit(lambda: warm(ls.library))

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: TrainmedicServer, params: t.DidChangeConfigurationParams) -> None:
        settings = params.settings
        workspace = ls.client_capabilities.workspace
        if settings is None and workspace is not None and workspace.configuration:
            with contextlib.suppress(Exception):
                found = await ls.workspace_configuration_async(
                    t.ConfigurationParams([t.ConfigurationItem(section="trainmedic")]))
                settings = found[0] if found else None
        ls.settings.update(settings)
        for state in ls.docs.values():
            ls.publish(state)  # page links in the diagnostics follow siteUrl

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TrainmedicServer, params: t.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        if ls.wants(doc.uri, doc.language_id):
            ls.schedule(ls.track(doc.uri), 0)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TrainmedicServer, params: t.DidChangeTextDocumentParams) -> None:
        state = ls.docs.get(params.text_document.uri)
        if state is not None:
            state.dirty = True
            ls.schedule(state, ls.settings.debounce_s)

    @server.feature(t.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TrainmedicServer, params: t.DidSaveTextDocumentParams) -> None:
        state = ls.docs.get(params.text_document.uri)
        if state is not None:
            state.dirty = False
            ls.schedule(state, 0)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TrainmedicServer, params: t.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: TrainmedicServer, params: t.HoverParams) -> t.Hover | None:
        return ls.hover(params)

    @server.feature(t.TEXT_DOCUMENT_CODE_ACTION,
                    t.CodeActionOptions(code_action_kinds=[t.CodeActionKind.QuickFix]))
    def code_action(ls: TrainmedicServer, params: t.CodeActionParams) -> list[t.CodeAction | t.Command] | None:
        return ls.code_actions(params)

    @server.feature(t.SHUTDOWN)
    def shutdown(ls: TrainmedicServer, _params: None) -> None:
        ls.cancel_all()

    @server.command(DIAGNOSE_TEXT)
    async def diagnose_text(ls: TrainmedicServer, *args: Any) -> dict[str, Any]:
        """[text, name?] -> the diagnosis JSON (schema trainmedic.diagnosis/v1) of a selected traceback."""
        if not args or not isinstance(args[0], str):
            raise JsonRpcInvalidParams(f"{DIAGNOSE_TEXT} takes the text to diagnose")
        name = args[1] if len(args) > 1 and isinstance(args[1], str) and args[1] else "<selection>"
        return await ls.diagnose_text(args[0], name)

    @server.command(DIAGNOSE_FILE)
    async def diagnose_file(ls: TrainmedicServer, *args: Any) -> dict[str, Any]:
        """[uri or path] -> the diagnosis JSON; an open document also gets diagnostics, whatever its name."""
        if not args or not isinstance(args[0], str):
            raise JsonRpcInvalidParams(f"{DIAGNOSE_FILE} takes a document URI or a path")
        return await ls.diagnose_uri(args[0])

    @server.command(COPY_VERIFY)
    def copy_verify(ls: TrainmedicServer, *args: Any) -> str:
        """Editors run this themselves (the VS Code extension copies to the clipboard); a server
        cannot reach the clipboard, so this fallback shows the command to copy."""
        text = str(args[0]) if args else ""
        ls.window_show_message(t.ShowMessageParams(t.MessageType.Info, f"Verify with: {text}"))
        return text

    @server.command(OPEN_PAGE)
    async def open_page(ls: TrainmedicServer, *args: Any) -> dict[str, Any]:
        """[id, {show: bool}?] -> {id, url, text}; shows the page unless show is false."""
        if not args or not isinstance(args[0], str):
            raise JsonRpcInvalidParams(f"{OPEN_PAGE} takes a finding id such as entry/cause")
        opts = args[1] if len(args) > 1 and isinstance(args[1], dict) else {}
        return await ls.open_page(args[0], bool(opts.get("show", True)))

    return server


def serve(settings: EditorSettings, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Talk LSP over the given streams until the client exits or disconnects."""
    server = create_server(settings)
    cap = os.environ.get("TRAINMEDIC_LSP_MAX_MESSAGE", "")
    guarded = GuardedInput(stdin, int(cap) if cap.isdigit() else MAX_MESSAGE)
    try:
        server.start_io(guarded, stdout)  # type: ignore[arg-type]  # readline/read are all pygls uses
    finally:
        server.cancel_all()
