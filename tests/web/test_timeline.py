"""The server-drawn timeline and the reduced-log plumbing behind it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from tests.web.conftest import match_line

SVG = "{http://www.w3.org/2000/svg}"


def _mark(kind: str, rank: int | None, line: int, time: float | None = None, path: str = "a.log",
          primary: bool = False, text: str = "x") -> dict[str, Any]:
    return {"kind": kind, "id": "e/c", "rank": rank, "path": path, "line": line, "time": time, "text": text,
            "primary": primary}


def _diag(rank: int | None = 2, ranks: tuple[int, ...] = (0, 1, 2, 3), verdict: str = "failure") -> dict[str, Any]:
    return {"verdict": verdict, "primary": {"id": "e/c", "rank": rank}, "inputs": [{"ranks": list(ranks)}]}


def test_modes_follow_what_the_logs_allow() -> None:
    from trainmedic.web.timeline import choose_mode

    assert choose_mode([_mark("progress", 0, 1, 10.0), _mark("initiating", 1, 5, 12.0)]) == "time"
    assert choose_mode([_mark("progress", 0, 1, 10.0), _mark("initiating", 1, 5, None)]) == "line"
    assert choose_mode([_mark("progress", 0, 1, None, "a"), _mark("initiating", 1, 5, None, "b")]) == "phase"
    assert choose_mode([_mark("progress", 0, 1, 3.0, "a"), _mark("initiating", 1, 5, 3.0, "b")]) == "phase"


@pytest.mark.parametrize("times", [(100.0, 160.0, 7300.0), (None, None, None)])
def test_one_lane_per_rank_and_the_first_failure_ringed(times: tuple[Any, ...]) -> None:
    from trainmedic.web.timeline import render_svg

    marks = [_mark("progress", 0, 10, times[0]), _mark("initiating", 2, 20, times[1], primary=True),
             _mark("cascade", 1, 30, times[2]), _mark("teardown", None, 31, times[2])]
    svg = render_svg(_diag(), marks)
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lane-label"]
    assert labels == ["rank 0", "rank 1", "rank 2 · failed first", "rank 3", "launcher / no rank"]
    primary = [g for g in root.iter(f"{SVG}g") if "mark-primary" in (g.get("class") or "")]
    assert len(primary) == 1
    assert root.get("data-mode") == ("time" if times[0] else "line")
    assert "rank 2 failed first" in (root.find(f"{SVG}desc").text or "")


def test_a_silent_rank_is_drawn_as_the_one_that_stopped_first() -> None:
    from trainmedic.web.timeline import render_svg

    marks = [_mark("cascade", 0, 10, primary=True), _mark("cascade", 1, 12)]
    svg = render_svg(_diag(rank=3), marks)
    assert "rank 3 · suspect (silent)" in svg
    assert 'stroke-dasharray="5 3"' in svg


def test_log_text_is_escaped_and_control_characters_dropped() -> None:
    from trainmedic.web.timeline import render_svg

    evil = '</title><script>alert(1)</script>\x1b[31m\x00 & "q"'
    svg = render_svg(_diag(), [_mark("initiating", 2, 3, text=evil, primary=True, path="<b>.log")])
    ET.fromstring(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert "\x1b" not in svg and "\x00" not in svg


def test_many_ranks_keep_only_lanes_with_events() -> None:
    from trainmedic.web.timeline import render_svg

    svg = render_svg(_diag(rank=700, ranks=tuple(range(1024))), [_mark("initiating", 700, 5, primary=True),
                                                                  _mark("cascade", 3, 9)])
    root = ET.fromstring(svg)
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "lane-label"]
    assert labels == ["rank 3", "rank 700 · failed first"]
    assert "1022 other rank(s) without events" in svg


def test_healthy_run_draws_progress_only() -> None:
    from trainmedic.web.timeline import render_svg

    svg = render_svg({"verdict": "healthy", "primary": None, "inputs": [{"ranks": [0]}]},
                     [_mark("progress", 0, 7)])
    ET.fromstring(svg)
    assert "No failure found" in svg


def test_compact_lines_keep_gaps_as_one_line_and_renumber() -> None:
    from trainmedic.web.uploads import CompactLines

    c = CompactLines(((2, "b"), (5, "é"), (6, "f")))
    assert c.data == "\nb\n\né\nf\n".encode()
    assert [c.number(i) for i in range(1, 6)] == [1, 2, 3, 5, 6]
    assert c.number(6) == 7  # past the kept lines: the lines after the last one


def test_analysis_gives_context_and_times(library: Any) -> None:
    from trainmedic.web.uploads import Upload, analyse

    oom = match_line(library, "cuda-out-of-memory/allocator-oom")
    text = "".join(f"[rank1]: 2026-12-01 10:00:{i:02d} step {i}\n" for i in range(30))
    text += f"[rank1]: Traceback (most recent call last):\n[rank1]:   File \"t.py\", line 1\n[rank1]: {oom}\n"
    out = analyse([Upload("rank1.log", text.encode())], library, 1 << 20)
    assert out.diagnosis.primary is not None and out.diagnosis.primary.rank == 1
    block = out.extra["context"][0]
    hits = [n for n, _, hit in block["lines"] if hit]
    assert hits == [33]
    assert [n for n, _, _ in block["lines"]] == list(range(27, 34))
    primary = next(m for m in out.extra["marks"] if m["primary"])
    assert primary["time"] is not None  # taken from the timestamp printed just above


def test_duplicate_names_stay_distinct() -> None:
    from trainmedic.web.uploads import unique_names

    assert unique_names(["a.log", "a.log", "", "  b  c "]) == ["a.log", "a.log#2", "upload-3.log", "b c"]


def test_a_long_run_is_drawn_zoomed_to_its_incident_with_arrows_and_links() -> None:
    """Progress at line 10 of a 2,000,000-line log, the failure at 1,999,000 and the others' timeouts
    just after: the picture shows the incident (with a way out to the whole run), an arrow from the
    failure to each rank it took down, and each quoted mark links to its line on the page."""
    from trainmedic.web.timeline import anchor, render_svg

    marks = [_mark("progress", 0, 10), _mark("initiating", 2, 1_999_000, primary=True),
             _mark("cascade", 0, 1_999_040), _mark("cascade", 1, 1_999_050), _mark("teardown", 3, 1_999_090)]
    svg = render_svg(_diag(), marks, anchors={("a.log", 1_999_000)})
    root = ET.fromstring(svg)
    assert "zoomed to the incident" in svg and 'href="?timeline=whole"' in svg
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("line ") and t.text.split()[1].isdigit()]
    assert ticks and all(int(t.split()[1]) > 1_900_000 for t in ticks)  # the axis spans the incident only
    assert len([ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "effect"]) == 3
    links = [a.get("href") for a in root.iter(f"{SVG}a") if a.get("class") == "mark-link"]
    assert links == ["#" + anchor("a.log", 1_999_000)]
    whole = ET.fromstring(render_svg(_diag(), marks, whole=True))
    assert "zoomed" not in ET.tostring(whole, encoding="unicode")
    ticks = [t.text for t in whole.iter(f"{SVG}text") if t.text and t.text.startswith("line ") and t.text.split()[1].isdigit()]
    assert any(int(t.split()[1]) < 1_000_000 for t in ticks)
