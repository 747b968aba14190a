"""The encyclopedia under `/library/`: the static site's own pages, rendered on request.

`trainmedic.site.build` is imported lazily; when it is not installed (or cannot render an entry)
a plain page generated from the same library stands in, so a diagnosis never links to nothing.
Site assets are read once from the site package's data into memory and served by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from trainmedic.catalog import Library
from trainmedic.model import Entry

BASE = "/library/"
log = logging.getLogger("trainmedic.web")


def _site() -> object | None:
    try:
        from trainmedic.site import build
    except ImportError:
        return None
    return build


def site_available() -> bool:
    return _site() is not None


def site_assets() -> dict[str, bytes]:
    """The site's CSS/JS by file name (empty without the site package)."""
    try:
        from trainmedic.site.build import static_dir
    except ImportError:
        return {}
    folder = static_dir()
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def index_page(library: Library, fallback: Callable[[], str]) -> str:
    try:
        from trainmedic.site.build import render_index
    except ImportError:
        return fallback()
    return render_index(library, base_url=BASE, app=True)


def entry_page(entry: Entry, library: Library, fallback: Callable[[Entry], str]) -> str:
    try:
        from trainmedic.site.build import SiteError, render_entry_page
    except ImportError:
        return fallback(entry)
    try:
        return render_entry_page(entry, library, base_url=BASE, app=True)
    except SiteError as exc:  # an incomplete entry still deserves a page
        log.warning("site page for %s is incomplete (%s); serving the plain page", entry.id, exc)
        return fallback(entry)


def cause_role(library: Library, cause_id: str) -> str:
    """The cause's role (initiating, cascade, teardown ...); an id the library lacks counts as cascade."""
    try:
        return library.cause(cause_id).role
    except KeyError:
        return "cascade"


def cause_title(library: Library, cause_id: str) -> str:
    """The cause's title, or its id when the library lacks it (a record from another library)."""
    try:
        return library.cause(cause_id).title
    except KeyError:
        return cause_id


def entry_url(full_id: str) -> str:
    """Link to an entry's page, or to a cause's own page when the id names one."""
    entry_id, _, cause_id = full_id.partition("/")
    return f"{BASE}{entry_id}/" + (f"{cause_id}/" if cause_id else "")


def cause_page(entry: Entry, cause_id: str, library: Library, fallback: Callable[[Entry], str]) -> str:
    try:
        from trainmedic.site.build import SiteError, render_cause_page
    except ImportError:
        return fallback(entry)
    try:
        return render_cause_page(entry, cause_id, library, base_url=BASE, app=True)
    except SiteError as exc:
        log.warning("site page for %s/%s is incomplete (%s); serving the plain page", entry.id, cause_id, exc)
        return fallback(entry)
