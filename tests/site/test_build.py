"""The static site: every page is built, parses strictly, links only to files that exist, and says only what the library says."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import html5lib
import pytest

from tests.conftest import run_cli
from trainmedic.catalog import load_library
from trainmedic.site.build import SiteError, build_site, render_entry_page, render_index

LIB = load_library()
NS = "{http://www.w3.org/1999/xhtml}"


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def parse(path: Path) -> Any:
    return html5lib.parse(path.read_bytes(), treebuilder="etree")


def links(path: Path) -> list[str]:
    """Every href and src on a page, plus the target of a meta refresh."""
    out: list[str] = []
    for el in parse(path).iter():
        out += [el.get(attr) for attr in ("href", "src") if el.get(attr) is not None]
        if el.tag == f"{NS}meta" and el.get("http-equiv") == "refresh":
            out.append(el.get("content").split("url=", 1)[1])
    return out


def ids(path: Path) -> set[str]:
    return {el.get("id") for el in parse(path).iter() if el.get("id")}


def resolve(site: Path, page: Path, href: str, base: str) -> tuple[Path, str] | None:
    """The file (and fragment) a local link points at, or None for an external link."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc:
        return None
    path = unquote(parts.path)
    if path.startswith("/"):
        assert path.startswith(base), f"{page}: {href} is outside the base URL {base}"
        target = site / path[len(base):]
    else:
        target = (page.parent / path) if path else page
    if path.endswith("/") or target.is_dir():
        target /= "index.html"
    return target.resolve(), parts.fragment


def test_every_entry_cause_and_alias_has_its_page(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "search-index.json").is_file()
    assert (site / "_static" / "site.css").is_file() and (site / "_static" / "search.js").is_file()
    for entry in LIB:
        assert (site / entry.id / "index.html").is_file(), entry.id
        for cause in entry.causes:
            assert (site / entry.id / cause.id / "index.html").is_file(), cause.full_id
        for alias in entry.aliases:
            assert (site / alias / "index.html").is_file(), alias


@pytest.mark.parametrize("fixture, base", [("site", ""), ("site_absolute", "/docs/")])
def test_every_internal_link_resolves_to_a_written_file_and_anchor(
    fixture: str, base: str, request: pytest.FixtureRequest
) -> None:
    site: Path = request.getfixturevalue(fixture)
    id_cache: dict[Path, set[str]] = {}
    broken = []
    checked = 0
    for page in pages(site):
        for href in links(page):
            found = resolve(site, page, href, base)
            if found is None:
                assert href.startswith("https://") or href.startswith("http://"), f"{page}: odd link {href}"
                continue
            target, fragment = found
            checked += 1
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href} -> missing {target}")
            elif fragment and target.suffix == ".html":
                if target not in id_cache:
                    id_cache[target] = ids(target)
                if fragment not in id_cache[target]:
                    broken.append(f"{page.relative_to(site)}: {href} -> no id {fragment!r} in {target.name}")
    assert not broken, "\n".join(broken[:20])
    assert checked > len(LIB) * 10


def test_every_page_parses_cleanly_in_strict_mode(site: Path) -> None:
    for page in pages(site):
        parser = html5lib.HTMLParser(strict=True)
        parser.parse(page.read_bytes())  # raises ParseError on the first spec violation
        assert not parser.errors, (page, parser.errors)


def test_entry_page_has_every_section_in_order_and_every_cause_anchor(site: Path) -> None:
    order = ["what-it-is", "symptoms", "affects", "confirm", "causes", "scale", "code", "references"]
    for entry in LIB:
        html = (site / entry.id / "index.html").read_text(encoding="utf-8")
        positions = [html.index(f'<section id="{s}"') for s in order]
        assert positions == sorted(positions), entry.id
        for cause in entry.causes:
            assert f'<section class="cause" id="{cause.id}"' in html
            for fp in cause.fingerprints:
                assert f"<code>{_escape(fp.regex)}</code>" in html, fp.id
        for key, _ in entry.code:
            assert f'id="code-{key}"' in html
        for ref in entry.references:
            assert f'href="{_escape(ref)}"' in html
        if entry.related:
            assert html.index('<section id="related"') < html.index('<section id="references"')


def test_search_index_holds_every_entry_and_cause(site: Path) -> None:
    data = json.loads((site / "search-index.json").read_text(encoding="utf-8"))
    assert data["schema"] == "trainmedic.site-search/v1"
    got = {d["id"] for d in data["docs"]}
    assert {e.id for e in LIB} <= got
    assert {c.full_id for c in LIB.causes()} <= got
    for doc in data["docs"]:
        assert (site / urlsplit(doc["url"]).path).is_file(), doc["url"]
    # The same data is inlined in the index so the search box works from file://, where fetch() cannot.
    inline = re.search(r'<script type="application/json" id="search-data">(.*?)</script>',
                       (site / "index.html").read_text(encoding="utf-8"), re.S)
    assert inline and json.loads(inline.group(1)) == data


def test_index_lists_every_entry_by_category_and_tag_with_the_diagnose_hint(site: Path) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "trainmedic diagnose PATH" in html
    for entry in LIB:
        assert f'id="category-{entry.category}"' in html
        assert html.count(f'href="{entry.id}/index.html"') >= 2 + len(entry.tags)  # nav, card, each tag


def test_renderers_for_the_web_app_use_clean_absolute_urls() -> None:
    entry = LIB.entry("dataloader-worker-failure")
    page = render_entry_page(entry, LIB)
    assert 'href="/_static/site.css"' in page
    assert 'href="/host-oom/"' in page  # a related entry, served at its stable URL
    index = render_index(LIB, base_url="/encyclopedia")
    assert 'href="/encyclopedia/dataloader-worker-failure/"' in index


ENTRY_YAML = """\
id: tiny-failure
title: Tiny <b>failure</b> & friends
category: memory
summary: >
  A summary with <script>alert("pwned")</script> in it, and `rm -rf <dir>` as a command.
tags: [tiny, "a<b"]
affects: ["torch < 2.0 & co"]
symptoms:
  - symptom: "RuntimeError: <unknown> went wrong"
    why: "because x < y"
causes:
  - id: tiny-cause
    title: The tiny cause
    role: initiating
    mechanism: "Something about <tensors> that is long enough to pass the schema."
    fingerprints:
      - id: tiny-fp
        regex: 'tiny <failure> \\(code \\d+\\) & "more"'
        weight: 0.9
    fix: ["Do <this>"]
    verify: ["grep '<x>' log.txt"]
    prevention: ["Never <that>"]
    missing:
      - fact: "the <fact>"
        command: "cat /proc/<pid>/status"
confirm: ["check <it>"]
scale: "At 1000 GPUs <everything> is worse."
code:
  pytorch: |
    if a < b and c > d:
        print("</script>")
related: {related}
references: ["https://example.org/?a=1&b=<2>"]
"""


def write_library(root: Path, related: str = "[]") -> Path:
    folder = root / "lib" / "memory"
    folder.mkdir(parents=True)
    (folder / "tiny-failure.yaml").write_text(ENTRY_YAML.format(related=related), encoding="utf-8")
    return root / "lib"


def test_site_is_built_from_the_library_and_escapes_its_text(tmp_path: Path) -> None:
    lib = write_library(tmp_path)
    out = tmp_path / "out"
    result = run_cli("site", "build", str(out), "--library", str(lib))
    assert result.code == 0, result.err
    assert "the index and 1 entry page " in result.out
    page = (out / "tiny-failure" / "index.html").read_text(encoding="utf-8")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Tiny &lt;b&gt;failure&lt;/b&gt; &amp; friends" in page
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in page
    assert "<code>rm -rf &lt;dir&gt;</code>" in page  # backticks become code, still escaped
    assert r"tiny &lt;failure&gt; \(code \d+\) &amp; &#34;more&#34;" in page
    assert "print(&#34;&lt;/script&gt;&#34;)" in page
    assert "cat /proc/&lt;pid&gt;/status" in page
    for html in (page, index):
        assert "<script>alert" not in html and "<b>failure" not in html
        assert len(re.findall(r"<script\b", html)) == html.count("</script>")  # no stray script opened
    parser = html5lib.HTMLParser(strict=True)
    parser.parse(page)
    parser.parse(index)
    # Only the one entry of that library: nothing is carried over from the bundled one.
    assert not (out / "dataloader-worker-failure").exists()
    tree = html5lib.parse(page, treebuilder="etree")
    text = "".join(tree.itertext())
    assert '<script>alert("pwned")</script>' in text  # shown to the reader as text


def test_an_unknown_related_id_fails_with_a_clear_message(tmp_path: Path) -> None:
    lib = write_library(tmp_path, related="[no-such-entry]")
    result = run_cli("site", "build", str(tmp_path / "out"), "--library", str(lib))
    assert result.code == 1
    assert "no-such-entry" in result.err and result.err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_an_entry_without_a_section_or_with_a_clashing_anchor_is_refused(tmp_path: Path) -> None:
    entry = LIB.entry("nan-loss")
    bad = dataclasses.replace(entry, confirm=())
    lib = dataclasses.replace(LIB, entries=tuple(bad if e.id == entry.id else e for e in LIB))
    with pytest.raises(SiteError, match="section 'confirm' is empty"):
        build_site(tmp_path / "out", lib)
    with pytest.raises(SiteError, match="confirm"):
        render_entry_page(bad, lib)
    clash = dataclasses.replace(entry, causes=(dataclasses.replace(entry.causes[0], id="symptoms"),))
    lib = dataclasses.replace(LIB, entries=tuple(clash if e.id == entry.id else e for e in LIB))
    with pytest.raises(SiteError, match="rename the cause"):
        build_site(tmp_path / "out", lib)
    assert not (tmp_path / "out").exists()


def test_out_must_be_a_folder(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = run_cli("site", "build", str(tmp_path / "file"))
    assert result.code == 2 and "not a folder" in result.err


def test_importing_the_builder_does_not_import_jinja2() -> None:
    code = "import sys, trainmedic.cli.main, trainmedic.site, trainmedic.site.build; print('jinja2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))
