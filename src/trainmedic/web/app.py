"""The FastAPI app: pages, the JSON API, the history, the encyclopedia.

Safe by default: no route maps a request to a file (templates and assets are package data read
at start-up, records and samples are looked up by id), every page is rendered by jinja2 with
autoescape on under a strict Content-Security-Policy, bodies past the upload cap get a 413
before they are read, and the history is written with bound parameters only.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jinja2
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from markupsafe import Markup, escape
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.datastructures import UploadFile

from trainmedic import __version__
from trainmedic.catalog import Library, load_library
from trainmedic.logs.sources import InputError
from trainmedic.model import SCHEMA
from trainmedic.report.common import when
from trainmedic.scan.database import PROGRESS
from trainmedic.util.redact import redact, redact_json
from trainmedic.util.text import human_bytes
from trainmedic.web import encyclopedia, timeline
from trainmedic.web.patterns import line_prefixes
from trainmedic.web.samples import Sample, all_samples
from trainmedic.web.store import VERDICTS, Record, Store, default_url, iso
from trainmedic.web.uploads import Diagnosed, TooLarge, Upload, analyse, check_lines, unique_names
from trainmedic.web.view import diagnosis_view, markdown_report

log = logging.getLogger("trainmedic.web")

MAX_FILES = 1024
DECODED_FACTOR = 10  # compressed uploads may decode to this many times the upload cap
# One diagnosis at a time: the compiled matcher shares its scratch space, and a 2-core laptop gains
# nothing from two scans at once. Pages and history reads do not wait for it.
_DIAGNOSE = threading.Lock()
_RECORD_ID = re.compile(r"[0-9a-f]{6,32}")
_SAFE_ASSET = re.compile(r"[A-Za-z0-9_.-]+")

CSP = ("default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
# The encyclopedia pages come from the site builder, whose templates may carry small inline styles.
CSP_LIBRARY = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
               "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
ASSET_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
               ".svg": "image/svg+xml", ".json": "application/json", ".png": "image/png", ".ico": "image/x-icon"}


@dataclass(frozen=True)
class Settings:
    """How the app runs; the CLI fills it from flags, tests build it directly."""

    db_url: str | None = None  # None: sqlite under the data dir
    max_upload_bytes: int = 100 << 20
    allowed_hosts: tuple[str, ...] | None = None  # None: any Host header (tests); the CLI passes loopback names
    library: Library | None = None
    environ: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- request bodies


class FileIn(BaseModel):
    """One log. Exactly one of `text` (the whole log), `lines` (the lines a client kept, each with
    its line number in the original file, increasing), or `data_base64` (raw bytes, e.g. zstd)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field("", max_length=1000, description="file name; per-rank names like rank3.log attribute ranks")
    text: str | None = None
    lines: list[tuple[int, str]] | None = Field(
        None, description="[[line_number, text], ...]: a reduced log; the diagnosis quotes these line numbers")
    total_lines: int | None = Field(None, ge=0, description="reduced logs: lines in the original file")
    bytes: int | None = Field(None, ge=0, description="reduced logs: size of the original file")
    data_base64: str | None = Field(None, description="raw (possibly gz/zst-compressed) bytes, base64")

    @model_validator(mode="after")
    def _one_body(self) -> FileIn:
        given = [k for k in ("text", "lines", "data_base64") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("each file needs exactly one of 'text', 'lines' or 'data_base64'")
        return self


class DiagnoseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    files: list[FileIn] = Field(default_factory=list, max_length=MAX_FILES)
    text: str | None = Field(None, description="a pasted log (same as one file named pasted.log)")


class DiagnoseOut(BaseModel):
    id: str | None = Field(description="the history record, or null with ?store=false")
    url: str | None = Field(description="the diagnosis page")
    diagnosis: dict[str, Any] = Field(description=f"the {SCHEMA} object, as `trainmedic diagnose --json` prints")


class RecordOut(BaseModel):
    id: str
    created: str
    diagnosis: dict[str, Any] = Field(description=f"the {SCHEMA} object")


class HistoryItem(BaseModel):
    id: str
    created: str
    verdict: str
    primary_id: str | None
    title: str | None
    rank: int | None
    inputs: str


class HistoryOut(BaseModel):
    items: list[HistoryItem]


class ErrorOut(BaseModel):
    detail: str


def _clean(text: str) -> str:
    """Text as UTF-8 can carry it (JSON may smuggle lone surrogates, which would break every response)."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


# ---------------------------------------------------------------- middleware


class _TooBig(Exception):
    pass


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_name(header: str) -> str:
    """The host of a Host header without its port, IPv6 literals included ("[::1]:8000" -> "::1")."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostCheck:
    """DNS rebinding: a page on another site that resolves its own name to 127.0.0.1 reaches this
    server with its own name in Host. Only the names the server was started for are answered."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = {host_name(h) for h in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
            if host_name(host) not in self.allowed:
                response = PlainTextResponse("invalid host header", status_code=400)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Guard:
    """Upload cap (413 before the body is read, or as soon as a chunked body passes it) and the
    security headers on every response."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self, got: int | None) -> str:
        limit = human_bytes(self.max_bytes)
        size = f" ({human_bytes(got)})" if got else ""
        return (f"upload too large{size}: the limit is {limit}. The page reduces big logs in your browser "
                "before sending; for scripts, raise it with `trainmedic serve --max-upload-mb N`.")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        csp = CSP_LIBRARY if path.startswith(encyclopedia.BASE) else CSP
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers", []))
                headers += [
                    (b"content-security-policy", csp.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cross-origin-opener-policy", b"same-origin"),
                ]
                message["headers"] = headers
            await send(message)

        length = next((v for k, v in scope.get("headers", []) if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._reject(send_with_headers, int(length))
            return
        seen = 0

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooBig
            return message

        try:
            await self.app(scope, counting_receive, send_with_headers)
        except _TooBig:
            if started:
                raise
            await self._reject(send_with_headers, None)

    async def _reject(self, send: Send, got: int | None) -> None:
        body = json.dumps({"detail": self._message(got)}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------- templates and assets


def _inline(text: str) -> Markup:
    """Escape, turning `backticked` spans into <code> (the library writes commands that way)."""
    parts = str(text).split("`")
    if len(parts) < 3 or len(parts) % 2 == 0:
        return escape(text)
    return Markup("").join(Markup("<code>{}</code>").format(p) if i % 2 else escape(p) for i, p in enumerate(parts))


def _fix_step(text: str) -> Markup:
    """A fix step: as `_inline`, and each library id it names (a step pointing to another cause)
    linked to that cause's page."""
    from trainmedic.report.common import library_ids, references

    ids = library_ids()
    out = Markup("")
    for i, part in enumerate(str(text).split("`")):
        if i % 2:
            out += Markup("<code>{}</code>").format(part)
            continue
        for piece, is_id in references(part, ids):
            out += (Markup('<a href="{}"><code>{}</code></a>').format(encyclopedia.entry_url(piece), piece)
                    if is_id else escape(piece))
    return out


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("trainmedic.web", "templates"),
        autoescape=True,  # every log line passes through here: nothing reaches HTML unescaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["inline"] = _inline
    env.filters["fix_step"] = _fix_step
    env.filters["human_bytes"] = human_bytes
    env.filters["entry_url"] = encyclopedia.entry_url
    env.filters["lane_label"] = timeline.lane_label
    env.globals["line_anchor"] = timeline.anchor
    env.filters["when"] = when
    env.globals["version"] = __version__
    env.globals["nav"] = ""
    return env


def _assets() -> dict[str, tuple[bytes, str]]:
    """The page's CSS and JS, read once from package data; served by name only."""
    out: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("trainmedic.web") / "static"
    for item in folder.iterdir():
        if item.is_file() and _SAFE_ASSET.fullmatch(item.name):
            suffix = "." + item.name.rsplit(".", 1)[-1]
            out[item.name] = (item.read_bytes(), ASSET_TYPES.get(suffix, "application/octet-stream"))
    return out


# ---------------------------------------------------------------- the app


def prefilter(library: Library) -> list[str]:
    """The keyword prefilter served to the page (see `trainmedic.scan.keywords`); '' means keep every line."""
    from trainmedic.scan.keywords import keywords

    return keywords(library)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    library = settings.library or load_library()
    store = Store(settings.db_url or default_url(settings.environ or None))
    store.create()
    env = _environment()
    assets = _assets()
    site_assets = encyclopedia.site_assets()
    samples: dict[str, Sample] = all_samples(library)
    words = prefilter(library)
    prefixes = line_prefixes()
    from trainmedic.api import Diagnoser

    Diagnoser(library).warm()  # compile the pattern database now, not on the first upload

    app = FastAPI(
        title="trainmedic",
        version=__version__,
        summary="Why did the training run fail? Send its logs, get the trainmedic.diagnosis/v1 verdict.",
        docs_url=None,  # Swagger UI loads from a CDN; /docs is our own page over /openapi.json
        redoc_url=None,
    )
    app.state.store = store
    app.state.settings = settings

    def page(template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = env.get_template(template).render(**ctx)
        return HTMLResponse(html, status_code=status)

    def not_found(what: str) -> HTMLResponse:
        return page("error.html", 404, page_title="Not found", message=what)

    def check_origin(request: Request) -> None:
        """A browser on another site may post a form here; refuse it (no CSRF into the history). A
        sandboxed iframe or a data: page sends `Origin: null`: that is no origin of this app either.
        Clients that are not browsers (curl, scripts) send neither header and are served."""
        origin = request.headers.get("origin")
        if origin is not None:
            host = request.headers.get("host", "")
            if origin == "null" or origin.split("://", 1)[-1] != host:
                raise HTTPException(403, "cross-origin request refused")
        site = request.headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise HTTPException(403, "cross-site request refused")

    # ------------------------------------------------------------ API

    @app.post(
        "/api/diagnose",
        tags=["api"],
        response_model=None,
        responses={200: {"model": DiagnoseOut}, 400: {"model": ErrorOut}, 413: {"model": ErrorOut},
                   422: {"model": ErrorOut}},
        openapi_extra={"requestBody": {"required": True, "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/DiagnoseIn"}},
            "multipart/form-data": {"schema": {"type": "object", "properties": {
                "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                          "description": "log files (plain, gz, zst); per-rank names attribute ranks"},
                "text": {"type": "string", "description": "a pasted log"}}}},
            "text/plain": {"schema": {"type": "string", "description": "one log"}},
        }}},
    )
    async def api_diagnose(request: Request, store_record: bool = Query(True, alias="store")) -> JSONResponse:
        """Diagnose one job's logs (one file per rank is best) and keep the result in the history.

        Reduced logs (`lines`) are laid back at their original line numbers before the scan, so the
        diagnosis quotes the user's own `path:line`.
        """
        check_origin(request)
        uploads = await _read_uploads(request, settings.max_upload_bytes)
        def run() -> Diagnosed:
            with _DIAGNOSE:
                return analyse(uploads, library, settings.max_upload_bytes * DECODED_FACTOR)

        try:
            outcome = await run_in_threadpool(run)
        except InputError as exc:
            raise HTTPException(400, str(exc)) from exc
        except TooLarge as exc:
            raise HTTPException(413, str(exc)) from exc
        # Secrets near the evidence (a token in an environment dump, a password in a URL) are never kept.
        data = redact_json(outcome.diagnosis.to_json())
        rid = None
        if store_record:
            rec = await run_in_threadpool(store.add, data, redact_json(outcome.extra),
                                          [redact(u.name) for u in uploads])
            rid = rec.id
        return JSONResponse({"id": rid, "url": f"/d/{rid}" if rid else None, "diagnosis": data})

    def load(rid: str) -> Record | None:
        if not _RECORD_ID.fullmatch(rid):
            return None
        return store.get(rid)

    @app.get("/api/diagnoses/{rid}", tags=["api"], response_model=RecordOut,
             responses={404: {"model": ErrorOut}})
    def api_record(rid: str) -> dict[str, Any]:
        """One stored diagnosis, in the same schema as the CLI's `--json`."""
        rec = load(rid)
        if rec is None:
            raise HTTPException(404, f"no diagnosis with id {rid!r}")
        return {"id": rec.id, "created": iso(rec.created), "diagnosis": rec.diagnosis}

    @app.get("/api/diagnoses", tags=["api"], response_model=HistoryOut, responses={422: {"model": ErrorOut}})
    def api_history(
        q: str = Query("", max_length=200, description="part of an id, a finding id or title, or an input name"),
        verdict: str = Query("", description="failure, hang or healthy"),
        since: str = Query("", description="YYYY-MM-DD or an ISO time (UTC)"),
        until: str = Query("", description="YYYY-MM-DD or an ISO time (UTC), exclusive"),
        limit: int = Query(50, ge=1, le=200),
    ) -> dict[str, Any]:
        """Search past diagnoses, newest first."""
        recs = store.search(q, _verdict(verdict), _when(since, "since"), _when(until, "until"), limit)
        return {"items": [r.summary() for r in recs]}

    @app.get("/api/library", tags=["api"])
    def api_library() -> dict[str, Any]:
        """Entries and causes, and what a client needs to cut a big log down as the server would read it.

        A line that contains none of `keywords` cannot match any fingerprint. When `keep_every_line`
        is true (some pattern has no usable literal) the prefilter cannot be used. `progress` are the
        progress-line patterns; `prefixes` the launcher prefixes that say which rank (or host) printed
        a line, as JavaScript regex sources (see `trainmedic.web.patterns`).
        """
        return {
            "keywords": [w for w in words if w],
            "keep_every_line": "" in words,
            "progress": [p.regex for p in PROGRESS],
            "prefixes": prefixes,
            "entries": [{
                "id": e.id, "title": e.title, "category": e.category, "summary": e.summary,
                "url": encyclopedia.entry_url(e.id),
                "causes": [{"id": c.full_id, "title": c.title, "role": c.role} for c in e.causes],
            } for e in library],
        }

    @app.get("/api/samples", tags=["api"])
    def api_samples() -> dict[str, Any]:
        """Sample failures to try, generated from lab captures and the library's fixture lines."""
        return {"samples": [s.info() for s in samples.values()]}

    @app.get("/api/samples/{sid}", tags=["api"], responses={404: {"model": ErrorOut}})
    def api_sample(sid: str) -> dict[str, Any]:
        s = samples.get(sid)
        if s is None:
            raise HTTPException(404, f"no sample {sid!r}")
        return {**s.info(), "files": [{"name": n, "text": t} for n, t in s.files]}

    # ------------------------------------------------------------ pages

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        lab = [s for s in samples.values() if s.source == "lab"]
        lib = [s for s in samples.values() if s.source == "library"]
        return page("index.html", page_title="Diagnose a failed training run", lab_samples=lab,
                    library_samples=lib, max_upload=settings.max_upload_bytes, nav="diagnose")

    @app.get("/d/{rid}", response_class=HTMLResponse, include_in_schema=False)
    def diagnosis_page(rid: str, request: Request) -> HTMLResponse:
        rec = load(rid)
        if rec is None:
            return not_found(f"No diagnosis with id {rid}. It may be in another history database.")
        view = diagnosis_view(rec, library)
        quoted = {(b["path"], n) for b in view["context"] for n, _, _ in b["lines"]}
        svg = timeline.render_svg(rec.diagnosis, rec.extra.get("marks", []), anchors=quoted,
                                  whole=request.query_params.get("timeline") == "whole")
        return page("diagnosis.html", page_title=view["headline"], v=view, rec=rec, svg=Markup(svg),
                    report=markdown_report(rec.diagnosis), nav="")

    @app.get("/d/{rid}/timeline.svg", include_in_schema=False)
    def timeline_svg(rid: str, request: Request) -> Response:
        rec = load(rid)
        if rec is None:
            return not_found(f"No diagnosis with id {rid}.")
        svg = timeline.render_svg(rec.diagnosis, rec.extra.get("marks", []),
                                  whole=request.query_params.get("timeline") == "whole")
        return Response(svg, media_type="image/svg+xml")

    @app.get("/d/{rid}/report.md", include_in_schema=False)
    def report_md(rid: str) -> Response:
        rec = load(rid)
        if rec is None:
            return not_found(f"No diagnosis with id {rid}.")
        return PlainTextResponse(markdown_report(rec.diagnosis), media_type="text/markdown; charset=utf-8")

    @app.get("/history", response_class=HTMLResponse, include_in_schema=False)
    def history(q: str = "", verdict: str = "", since: str = "", until: str = "") -> HTMLResponse:
        error = ""
        items: list[Record] = []
        try:
            items = store.search(q[:200], _verdict(verdict), _when(since, "since"), _when(until, "until"), 100)
        except HTTPException as exc:
            error = str(exc.detail)
        return page("history.html", page_title="History", items=items, q=q, verdict=verdict, since=since,
                    until=until, error=error, verdicts=VERDICTS, nav="history", db=store.display_url())

    @app.get("/api/fleet", tags=["api"])
    def fleet_api() -> dict[str, Any]:
        """The fleet report (`trainmedic fleet report --format json`) over this server's database."""
        from trainmedic.fleet.report import summarise
        from trainmedic.fleet.store import fleet_rows

        return summarise(fleet_rows(store.engine))

    @app.get("/fleet", response_class=HTMLResponse, include_in_schema=False)
    def fleet() -> HTMLResponse:
        from trainmedic.fleet.report import ALPHA, summarise
        from trainmedic.fleet.store import fleet_rows

        s = summarise(fleet_rows(store.engine))
        causes = s["causes"][:12]
        widest = max((c["jobs"] for c in causes), default=1)
        hosts = s["hosts"][:12]
        most = max([h["initiated"] for h in hosts] + [h["expected"] for h in hosts] + [1])
        return page("fleet.html", page_title="Fleet", s=s, causes=causes, widest=widest, hosts=hosts, most=most,
                    alpha=ALPHA, nav="fleet", db=store.display_url())

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs() -> HTMLResponse:
        return page("docs.html", page_title="API", spec=app.openapi(), nav="api")

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        asset = assets.get(name)
        if asset is None:
            return not_found("No such asset.")
        return Response(asset[0], media_type=asset[1], headers={"cache-control": "no-cache"})

    # ------------------------------------------------------------ encyclopedia

    def fallback_index() -> str:
        return env.get_template("library_index.html").render(page_title="Failure encyclopedia", library=library,
                                                             nav="library")

    def fallback_entry(entry: Any) -> str:
        return env.get_template("library_entry.html").render(page_title=entry.title, entry=entry, nav="library")

    @app.get("/library", include_in_schema=False)
    def library_root() -> RedirectResponse:
        return RedirectResponse(encyclopedia.BASE, status_code=308)

    @app.get("/library/", response_class=HTMLResponse, include_in_schema=False)
    def library_index() -> HTMLResponse:
        return HTMLResponse(encyclopedia.index_page(library, fallback_index))

    @app.get("/library/_static/{name}", include_in_schema=False)
    def library_static(name: str) -> Response:
        data = site_assets.get(name)
        if data is None:
            return not_found("No such asset.")
        suffix = "." + name.rsplit(".", 1)[-1]
        return Response(data, media_type=ASSET_TYPES.get(suffix, "application/octet-stream"))

    @app.get("/library/{entry_id}", include_in_schema=False)
    def library_entry_noslash(entry_id: str) -> Response:
        return RedirectResponse(f"{encyclopedia.BASE}{entry_id}/", status_code=308)

    @app.get("/library/{entry_id}/", response_class=HTMLResponse, include_in_schema=False)
    def library_entry(entry_id: str) -> Response:
        try:
            entry, _ = library.resolve(entry_id)
        except KeyError:
            return not_found(f"No encyclopedia entry {entry_id}.")
        if entry.id != entry_id:  # an alias
            return RedirectResponse(encyclopedia.entry_url(entry.id), status_code=308)
        return HTMLResponse(encyclopedia.entry_page(entry, library, fallback_entry))

    @app.get("/library/{entry_id}/{cause_id}/", response_class=HTMLResponse, include_in_schema=False)
    def library_cause(entry_id: str, cause_id: str) -> Response:
        try:
            entry, cause = library.resolve(f"{entry_id}/{cause_id}")
        except KeyError:
            return not_found(f"No encyclopedia entry {entry_id}/{cause_id}.")
        if cause is None:
            return RedirectResponse(encyclopedia.entry_url(entry.id), status_code=308)
        if (entry.id, cause.id) != (entry_id, cause_id):  # an alias of the entry
            return RedirectResponse(encyclopedia.entry_url(cause.full_id), status_code=308)
        return HTMLResponse(encyclopedia.cause_page(entry, cause.id, library, fallback_entry))

    def openapi() -> dict[str, Any]:
        """FastAPI's document, plus the JSON body models it cannot see (the route reads the body itself)."""
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            body = DiagnoseIn.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas.update(body.pop("$defs", {}))
            schemas["DiagnoseIn"] = body
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to extend the document

    # ------------------------------------------------------------ errors

    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if request.url.path.startswith("/api/") or exc.status_code not in (404,):
            return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
        return not_found(str(exc.detail))

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _first_error(exc.errors())}, status_code=422)

    if settings.allowed_hosts:
        app.add_middleware(HostCheck, allowed=settings.allowed_hosts)
    app.add_middleware(Guard, max_bytes=settings.max_upload_bytes)
    return app


def _first_error(errors: Any) -> str:
    """One line a person can act on, out of pydantic's list."""
    try:
        err = next(iter(errors))
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        return f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid request"))
    except (StopIteration, TypeError, AttributeError):
        return "invalid request"


def _verdict(v: str) -> str | None:
    v = v.strip().lower()
    if not v:
        return None
    if v not in VERDICTS:
        raise HTTPException(422, f"verdict must be one of {', '.join(VERDICTS)}")
    return v


def _when(v: str, what: str) -> dt.datetime | None:
    v = v.strip()
    if not v:
        return None
    try:
        if len(v) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(v), dt.time())
        when = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
        if when.tzinfo is not None:
            when.astimezone(dt.timezone.utc)  # year 9999 with a negative offset overflows here, not later
        return when
    except (ValueError, OverflowError):
        raise HTTPException(422, f"{what}: expected YYYY-MM-DD or an ISO time, got {v[:40]!r}") from None


async def _read_uploads(request: Request, cap: int) -> list[Upload]:
    """The request body as uploads, whatever the client chose: JSON, multipart, or plain text."""
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    raw: list[Upload] = []
    if ctype == "application/json":
        body = await request.body()
        try:
            payload = DiagnoseIn.model_validate_json(body)
        except ValidationError as exc:
            raise HTTPException(422, _first_error(exc.errors())) from exc
        if payload.text is not None and payload.text.strip():
            raw.append(Upload("pasted.log", _clean(payload.text).encode()))
        for f in payload.files:
            raw.append(_file_upload(f))
    elif ctype in ("multipart/form-data", "application/x-www-form-urlencoded"):
        try:
            form = await request.form(max_files=MAX_FILES, max_fields=MAX_FILES, max_part_size=cap)
        except _TooBig:
            raise
        except Exception as exc:  # multipart parse errors come in several types
            raise HTTPException(400, f"cannot read the form: {exc}") from exc
        text = form.get("text")
        if isinstance(text, str) and text.strip():
            raw.append(Upload("pasted.log", text.encode("utf-8", errors="replace")))
        for key in ("files", "file"):
            for item in form.getlist(key):
                if isinstance(item, UploadFile):
                    raw.append(Upload(item.filename or "", await item.read()))
                elif isinstance(item, str) and item.strip():
                    raw.append(Upload("", item.encode("utf-8", errors="replace")))
        await form.close()
    elif ctype in ("text/plain", ""):
        body = await request.body()
        if body.strip():
            raw.append(Upload("pasted.log", body))
    else:
        raise HTTPException(415, "send application/json, multipart/form-data or text/plain")
    raw = [u for u in raw if u.lines or u.data]
    if not raw:
        raise HTTPException(400, "nothing to diagnose: paste a log or add log files")
    names = unique_names(u.name for u in raw)
    return [Upload(n, u.data, u.lines, u.total_lines, u.original_bytes) for n, u in zip(names, raw, strict=True)]


def _file_upload(f: FileIn) -> Upload:
    name = _clean(f.name)
    if f.lines is not None:
        lines = tuple((n, _clean(t).rstrip("\r")) for n, t in f.lines)
        try:
            check_lines(name or "file", lines)
        except InputError as exc:
            raise HTTPException(422, str(exc)) from exc
        return Upload(name, None, lines, f.total_lines, f.bytes)
    if f.data_base64 is not None:
        try:
            return Upload(name, base64.b64decode(f.data_base64, validate=True))
        except (binascii.Error, ValueError) as exc:
            raise HTTPException(422, f"{name or 'file'}: data_base64 is not valid base64") from exc
    return Upload(name, _clean(f.text or "").encode())
