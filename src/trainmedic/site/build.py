"""Render the library as a static HTML encyclopedia.

Every word about a failure comes from the library files; this module only arranges it. The two
renderers (`render_index`, `render_entry_page`) are shared with the web app, which serves the same
pages; `build_site` writes them all to a folder with a search index and the static assets.
jinja2 is imported on first render, so the rest of trainmedic never pays for it.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainmedic.catalog import CODE_KEYS, Library
from trainmedic.fixtures import fixture_lines
from trainmedic.model import Entry

if TYPE_CHECKING:
    import jinja2
    from markupsafe import Markup

STATIC_FOLDER = "_static"  # a leading underscore: entry ids are kebab-case, so no entry can take this name
SEARCH_INDEX = "search-index.json"
SEARCH_SCHEMA = "trainmedic.site-search/v1"
DIAGNOSE_COMMAND = "trainmedic diagnose PATH"

CODE_TITLES = {"pytorch": "PyTorch", "hf_trainer": "HF Trainer", "deepspeed": "DeepSpeed", "lightning": "Lightning"}
ROLE_HELP = {
    "initiating": "can start a failure on its own",
    "cascade": "usually a consequence of a failure elsewhere",
    "teardown": "the launcher stopping the survivors",
}
# Element ids an entry page uses for its own sections; a cause id (its anchor) must not take one.
RESERVED_IDS = frozenset({
    "main", "q", "what-it-is", "symptoms", "affects", "confirm", "causes", "scale", "code", "related",
    "references", *(f"code-{k}" for k in CODE_KEYS),
})
# Words that read wrong when a category id is merely capitalised.
_ACRONYMS = {"gpu": "GPU", "cuda": "CUDA", "nccl": "NCCL", "hf": "HF", "oom": "OOM", "io": "I/O", "fsdp": "FSDP"}


class SiteError(ValueError):
    """The library cannot make a complete site; the message lists every gap and how to fix it."""


# ---------------------------------------------------------------- urls


@dataclass(frozen=True)
class Urls:
    """Links for one page.

    `root` is what precedes a site path: the base URL (e.g. "/") or a relative prefix ("../").
    Relative builds link to explicit index.html files so the site also works from file://,
    where a link to a folder shows a directory listing instead of the page.
    """

    root: str
    explicit_index: bool

    def _page(self, path: str) -> str:
        suffix = "index.html" if self.explicit_index else ""
        return f"{self.root}{path}{suffix}"

    def index(self) -> str:
        return self._page("") or "./"

    def entry(self, entry_id: str) -> str:
        return self._page(f"{entry_id}/")

    def cause(self, full_id: str) -> str:
        """A cause's own page."""
        return self.cause_page(full_id)

    def cause_page(self, full_id: str) -> str:
        return self._page(f"{full_id}/")

    def cause_section(self, full_id: str) -> str:
        """A cause's section on its entry's page."""
        entry_id, _, cause_id = full_id.partition("/")
        return f"{self.entry(entry_id)}#{cause_id}"

    def category(self, category: str) -> str:
        return f"{self.index()}#category-{category}"

    def tag(self, tag: str) -> str:
        return f"{self.index()}#tag-{slug(tag)}"

    def static(self, name: str) -> str:
        return f"{self.root}{STATIC_FOLDER}/{name}"


def _urls(base_url: str, depth: int) -> Urls:
    """Absolute links under `base_url`, or relative ones (`base_url` "") for a page `depth` folders down."""
    if base_url:
        return Urls(base_url if base_url.endswith("/") else base_url + "/", explicit_index=False)
    return Urls("../" * depth, explicit_index=True)


def slug(text: str) -> str:
    """An id-safe form of a tag, for anchors."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "tag"


def category_title(category: str) -> str:
    words = [_ACRONYMS.get(w, w) for w in category.split("-")]
    first = words[0] if words[0] in _ACRONYMS.values() else words[0].capitalize()
    return " ".join([first, *words[1:]])


# ---------------------------------------------------------------- checks


def entry_problems(entry: Entry, library: Library) -> list[str]:
    """What keeps `entry` from making a complete page, as fix-it messages (empty when none)."""
    ids = {e.id for e in library}
    causes = {c.full_id for c in library.causes()}
    where = entry.source or entry.id
    required: dict[str, object] = {
        "summary": entry.summary, "symptoms": entry.symptoms, "affects": entry.affects,
        "confirm": entry.confirm, "causes": entry.causes, "scale": entry.scale, "code": entry.code,
        "references": entry.references,
    }
    problems = [f"{where}: section {name!r} is empty; add it to the YAML" for name, v in required.items() if not v]
    problems += [
        f"{where}: related id {rel!r} is not an entry in the library; fix or remove it"
        for rel in entry.related if rel not in ids
    ]
    for c in entry.causes:
        parts = {"mechanism": c.mechanism, "fingerprints": c.fingerprints, "fix": c.fix,
                 "verify": c.verify, "prevention": c.prevention}
        if c.lineless:
            del parts["fingerprints"]  # read from metric lines, a stop after the finish or a count, not a line
        problems += [f"{where}: cause {c.id!r} has no {name!r}; add it" for name, v in parts.items() if not v]
        if c.id in RESERVED_IDS:
            problems.append(f"{where}: cause id {c.id!r} is also a section anchor of the page; rename the cause")
        problems += [
            f"{where}: cause {c.id!r} competes with unknown cause {comp!r}; fix or remove it"
            for comp in c.competes if comp not in causes
        ]
    return problems


def check_library(library: Library) -> list[str]:
    """Every gap in the library that would leave a page incomplete or a link dangling."""
    return [p for e in library for p in entry_problems(e, library)]


# ---------------------------------------------------------------- templates


def static_dir() -> Path:
    """The CSS and JS every page links to under `_static/`; the web app serves this folder too."""
    return Path(__file__).parent / "static"


def inline_code(text: str) -> Markup:
    """Escape `text`, turning `backticked` spans into <code>: the library writes commands that way."""
    from markupsafe import Markup, escape

    parts = text.split("`")
    if len(parts) < 3 or len(parts) % 2 == 0:  # no pair, or an unmatched backtick: plain text
        return escape(text)
    return Markup("").join(
        Markup("<code>{}</code>").format(p) if i % 2 else escape(p) for i, p in enumerate(parts)
    )


@functools.cache
def _environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("trainmedic.site", "templates"),
        autoescape=True,  # log lines and regexes are full of < > & "; nothing reaches HTML unescaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["inline"] = inline_code
    env.filters["category_title"] = category_title
    env.filters["slug"] = slug
    env.globals.update(
        CODE_TITLES=CODE_TITLES, ROLE_HELP=ROLE_HELP, DIAGNOSE_COMMAND=DIAGNOSE_COMMAND, STATIC=STATIC_FOLDER,
        app=False,  # a page of the static site; `trainmedic serve` renders its own with app=True
    )
    return env


def _render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def _categories(library: Library) -> list[tuple[str, list[Entry]]]:
    grouped: dict[str, list[Entry]] = {}
    for e in sorted(library, key=lambda e: e.title.lower()):
        grouped.setdefault(e.category, []).append(e)
    return sorted(grouped.items())


def _tags(library: Library) -> list[tuple[str, list[Entry]]]:
    """Tags grouped by their anchor, so two spellings of one tag never give two equal ids."""
    grouped: dict[str, tuple[str, list[Entry]]] = {}
    for e in sorted(library, key=lambda e: e.title.lower()):
        for t in e.tags:
            grouped.setdefault(slug(t), (t, []))[1].append(e)
    return [grouped[k] for k in sorted(grouped)]


def search_index(library: Library, base_url: str = "") -> dict[str, Any]:
    """Every entry and cause with the words and fingerprints the search box looks through.

    URLs are relative to the site root unless `base_url` is given. The fingerprints let the
    search box match a pasted log line the way `diagnose` would, offline.
    """
    urls = _urls(base_url, 0)
    docs: list[dict[str, Any]] = []
    for e in library:
        docs.append({
            "kind": "entry", "id": e.id, "entry": e.id, "title": e.title, "category": e.category,
            "tags": list(e.tags), "url": urls.entry(e.id), "text": e.summary,
            "words": " ".join([*e.aliases, *(s.symptom for s in e.symptoms)]),
            "fingerprints": [], "phrases": [], "prior": 0,
        })
        for c in e.causes:
            docs.append({
                "kind": "cause", "id": c.full_id, "entry": e.id, "title": c.title, "category": e.category,
                "tags": list(e.tags), "url": urls.cause(c.full_id), "text": c.mechanism, "role": c.role,
                "words": " ".join(f.id for f in c.fingerprints),
                "phrases": [p.lower() for p in c.phrases],
                "prior": library.priors.get(c.full_id, 0),  # how often it is the answer in real logs
                # A fallback's fingerprints are generic words ("error", "Bus error" among crash words):
                # a pasted line that only they match says nothing about which cause it is.
                "fingerprints": [] if c.fallback else [
                    {"id": f.id, "regex": f.regex, "ignore_case": f.ignore_case} for f in c.fingerprints],
            })
    return {"schema": SEARCH_SCHEMA, "docs": docs}


def render_index(library: Library, base_url: str = "/", *, app: bool = False) -> str:
    """The front page: search, the diagnose hint, and every entry by category and by tag.

    `base_url` "" makes every link relative (for a folder opened from disk). `app`: served inside
    `trainmedic serve`, with the app's navigation and its Diagnose page instead of the CLI command.
    """
    urls = _urls(base_url, 0)
    return _render(
        "index.html",
        library=library,
        urls=urls,
        categories=_categories(library),
        tags=_tags(library),
        counts={"entries": len(library), "causes": sum(len(e.causes) for e in library),
                "fingerprints": sum(1 for _ in library.fingerprints())},
        search=search_index(library, base_url),
        page_title="Failure encyclopedia",
        current=None,
        app=app,
    )


def render_entry_page(entry: Entry, library: Library, base_url: str = "/", *, app: bool = False) -> str:
    """One entry with all its sections, each cause anchored at `#<cause-id>`."""
    problems = entry_problems(entry, library)
    if problems:
        raise SiteError("; ".join(problems))
    urls = _urls(base_url, 1)
    by_id = {e.id: e for e in library}
    causes = {c.full_id: c for c in library.causes()}
    return _render(
        "entry.html",
        entry=entry,
        urls=urls,
        categories=_categories(library),
        related=[by_id[r] for r in entry.related],
        causes_by_id=causes,
        finished_by=_finished_by(library),
        # What the log shows, per cause: the lines the library's own fixtures say it matches.
        examples={c.id: [f.text for f in fixture_lines(entry) if f.kind == "match" and f.cause == c.full_id][:2]
                  for c in entry.causes},
        code=[(k, dict(entry.code)[k]) for k in CODE_KEYS if k in dict(entry.code)],
        page_title=entry.title,
        current=entry.id,
        app=app,
    )


def _finished_by(library: Library) -> dict[str, list[str]]:
    """after_finish cause -> the causes whose stop, after the run finished, it is (their finished_as)."""
    out: dict[str, list[str]] = {}
    for c in library.causes():
        if c.finished_as:
            out.setdefault(c.finished_as, []).append(c.full_id)
    return out


def render_cause_page(entry: Entry, cause_id: str, library: Library, base_url: str = "/", *,
                      app: bool = False) -> str:
    """One cause on a page of its own: what it is, what the log shows, the fix, how to verify it;
    its fingerprints last, folded."""
    c = entry.cause(cause_id)
    return _render(
        "cause.html",
        entry=entry,
        c=c,
        urls=_urls(base_url, 2),
        categories=_categories(library),
        causes_by_id={x.full_id: x for x in library.causes()},
        finished_by=_finished_by(library),
        examples={c.id: [f.text for f in fixture_lines(entry) if f.kind == "match" and f.cause == c.full_id][:2]},
        page_title=f"{c.title} · {entry.title}",
        current=entry.id,
        app=app,
    )


def render_redirect(target: str, title: str, base_url: str = "", depth: int = 2) -> str:
    """A stub at an old or secondary URL (a cause, an alias) that sends the reader on."""
    urls = _urls(base_url, depth)
    return _render("redirect.html", target=target, title=title, urls=urls, page_title=title)


# ---------------------------------------------------------------- build


def _pages(library: Library, base_url: str) -> Iterator[tuple[str, str]]:
    yield "index.html", render_index(library, base_url)
    for e in library:
        yield f"{e.id}/index.html", render_entry_page(e, library, base_url)
        for c in e.causes:
            yield f"{e.id}/{c.id}/index.html", render_cause_page(e, c.id, library, base_url)
        for alias in e.aliases:
            target = _urls(base_url, 1).entry(e.id)
            yield f"{alias}/index.html", render_redirect(target, e.title, base_url, depth=1)


def build_site(out: Path, library: Library, base_url: str = "") -> list[Path]:
    """Write the whole site under `out` and return the files written.

    Refuses (SiteError) before writing anything when an entry lacks a section or links nowhere.
    """
    problems = check_library(library)
    if problems:
        raise SiteError(f"{len(problems)} problem(s): " + "; ".join(problems))
    pages = list(_pages(library, base_url))  # render everything first: a template error writes nothing
    written: list[Path] = []
    for rel, html in pages:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        written.append(path)
    index = out / SEARCH_INDEX
    index.write_text(json.dumps(search_index(library, base_url), indent=1) + "\n", encoding="utf-8")
    written.append(index)
    written += _copy_static(out / STATIC_FOLDER)
    return written


def _copy_static(dest: Path) -> Iterable[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(static_dir().iterdir()):
        if src.is_file():
            shutil.copyfile(src, dest / src.name)
            yield dest / src.name
