"""The timeline picture: one lane per rank, the first failure and what followed, drawn as SVG.

Drawn by the server from the stored marks, with no script, font or stylesheet of its own, so the
same markup works inline in the page and as `timeline.svg`. Three ways to lay out the x axis,
chosen by what the logs allow:

- `time`: every mark has a timestamp (its own line's, or one printed just above it);
- `line`: no clocks, but all marks are in one file, so line order is the order of events;
- `phase`: no clocks and several files, whose line numbers cannot be compared: columns for the
  last progress, the first failure, what followed and the launcher's teardown.

Every piece of log text goes through `_esc`: the SVG is inlined in HTML and must never carry markup.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from typing import Any

from trainmedic.util.text import rank_label

WIDTH = 960
LABEL_W = 190
LANE_H = 28
TOP = 62
PAD = 14
MAX_LANES = 48

COLORS = {
    "initiating": ("#d62728", "#7a0c0c"),
    "stall": ("#8e44ad", "#4a235a"),
    "cascade": ("#f39c12", "#935d07"),
    "teardown": ("#95a5a6", "#505a5b"),
    "progress": ("#27ae60", "#145a32"),
    "benign": ("#bdc3c7", "#6c7a7d"),
}
LEGEND = {
    "progress": "last progress",
    "initiating": "failure (initiating)",
    "stall": "stall",
    "cascade": "collateral (cascade)",
    "teardown": "launcher teardown",
}
PHASES = (("progress", "last progress"), ("primary", "first failure"), ("followed", "what followed"),
          ("teardown", "launcher teardown"))

_TIME_STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
               86400)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _esc(text: object) -> str:
    """Escape for XML text and attributes, dropping characters XML 1.0 cannot carry."""
    s = _CONTROL.sub("", str(text))
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


ZOOM = 20.0  # a run this many times longer than its incident is drawn zoomed to the incident


def anchor(path: str, line: int) -> str:
    """The element id of a quoted log line on the diagnosis page: a mark links to its evidence."""
    return "ln-" + re.sub(r"[^A-Za-z0-9]+", "-", str(path))[-80:].strip("-") + f"-{int(line)}"


NO_RANK = "launcher / no rank"  # the lane of lines no rank printed: the launcher's, mostly


def lane_label(rank: int | None) -> str:
    """A lane's name: `rank 3`, or the launcher's lane."""
    return rank_label(rank, NO_RANK)


def choose_mode(marks: Sequence[dict[str, Any]]) -> str:
    times = [m["time"] for m in marks if m.get("time") is not None]
    if marks and len(times) == len(marks) and max(times) > min(times):
        return "time"
    if len({m["path"] for m in marks}) <= 1:
        return "line"
    return "phase"


def _lanes(diagnosis: dict[str, Any], marks: Sequence[dict[str, Any]]) -> tuple[list[int | None], int]:
    """Ranks to draw, numeric first, the no-rank lane last; and how many ranks were left out."""
    ranks: set[int] = {r for i in diagnosis.get("inputs", []) for r in i.get("ranks", [])}
    with_marks = {m["rank"] for m in marks}
    primary = diagnosis.get("primary") or {}
    ranks |= {r for r in with_marks if r is not None}
    if primary.get("rank") is not None:
        ranks.add(primary["rank"])
    hidden = 0
    if len(ranks) > MAX_LANES:
        keep = {r for r in with_marks if r is not None} | ({primary["rank"]} if primary.get("rank") is not None
                                                          else set())
        hidden = len(ranks - keep)
        ranks = keep
    lanes: list[int | None] = list(sorted(ranks)[: MAX_LANES * 2])
    if None in with_marks or not lanes:
        lanes.append(None)
    return lanes, hidden


def _nice_step(span: float, target: int = 6) -> float:
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def _duration(seconds: float) -> str:
    s = round(seconds)
    if abs(seconds) < 10 and seconds != s:
        return f"{seconds:.1f}s"
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s" if s % 60 else f"{s // 60}m"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def _shape(kind: str, x: float, y: float, primary: bool, tip: str, legend: bool = False) -> str:
    fill, stroke = COLORS.get(kind, COLORS["cascade"])
    common = f'fill="{fill}" stroke="{stroke}" stroke-width="1"'
    cls = "legend-mark" if legend else f'mark mark-{_esc(kind)}{" mark-primary" if primary else ""}'
    parts = [f'<g class="{cls}">', f"<title>{_esc(tip)}</title>"]
    if primary:
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="12" fill="none" stroke="{fill}" stroke-width="2.5"/>')
    if kind == "cascade":
        parts.append(f'<path d="M{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y + 6:.1f} L{x - 7:.1f},{y + 6:.1f} Z" {common}/>')
    elif kind == "teardown":
        parts.append(f'<rect x="{x - 4.5:.1f}" y="{y - 4.5:.1f}" width="9" height="9" {common}/>')
    elif kind == "progress":
        parts.append(f'<path d="M{x:.1f},{y - 7:.1f} L{x + 7:.1f},{y:.1f} L{x:.1f},{y + 7:.1f} '
                     f'L{x - 7:.1f},{y:.1f} Z" {common}/>')
    else:
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{7 if primary else 6}" {common}/>')
    parts.append("</g>")
    return "".join(parts)


def _tip(m: dict[str, Any]) -> str:
    name = str(m["path"]).rsplit("/", 1)[-1]
    what = "last progress" if m["kind"] == "progress" else m["id"]
    return f"{lane_label(m['rank'])} · {what} · {name}:{m['line']}\n{m.get('text', '')}"


def _incident(mode: str, marks: Sequence[dict[str, Any]]) -> tuple[float, float] | None:
    """The x range of the incident (the failure and what followed), when the run around it is so much
    longer that drawing all of it would squeeze the incident into a point: a big log's picture."""
    if mode not in ("time", "line"):
        return None
    key = "time" if mode == "time" else "line"
    vals = [float(m[key]) for m in marks]
    inc = [float(m[key]) for m in marks if m["kind"] != "progress"]
    if len(inc) < 2 or not vals:
        return None
    span, whole = max(inc) - min(inc), max(vals) - min(vals)
    if span <= 0 or whole <= ZOOM * span:
        return None
    pad = span * 0.15
    return min(inc) - pad, max(inc) + pad


def render_svg(diagnosis: dict[str, Any], marks: Sequence[dict[str, Any]], *, whole: bool = False,
               anchors: set[tuple[str, int]] | frozenset[tuple[str, int]] = frozenset()) -> str:
    """The whole picture as an SVG document (no XML declaration, so it can be inlined): zoomed to the
    incident on a long run unless `whole`; each mark whose line the page quotes (`anchors`) links to it."""
    lanes, hidden = _lanes(diagnosis, marks)
    mode = choose_mode(marks)
    primary = diagnosis.get("primary") or {}
    pmark = next((m for m in marks if m.get("primary")), None)
    silent = primary.get("rank") if pmark is not None and pmark["rank"] != primary.get("rank") else None
    lead_rank = primary.get("rank") if primary else None
    height = TOP + LANE_H * len(lanes) + 58
    x0, x1 = LABEL_W + PAD, WIDTH - 24
    lane_y = {r: TOP + LANE_H * i + LANE_H / 2 for i, r in enumerate(lanes)}

    out: list[str] = []
    title = _summary(diagnosis, marks, silent)
    out.append(
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" aria-labelledby="tl-title tl-desc" '
        f'data-mode="{mode}" font-family="system-ui, sans-serif" font-size="12">'
    )
    out.append(f'<title id="tl-title">Timeline: one lane per rank</title><desc id="tl-desc">{_esc(title)}</desc>')
    out.append(f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>')

    # legend
    kinds = [k for k in LEGEND if any(m["kind"] == k for m in marks)]
    lx = float(LABEL_W + PAD)
    for k in kinds:
        out.append(_shape(k, lx + 6, 18, False, LEGEND[k], legend=True))
        out.append(f'<text x="{lx + 18:.1f}" y="22" fill="#333">{_esc(LEGEND[k])}</text>')
        lx += 30 + 7.2 * len(LEGEND[k])
    if pmark is not None:
        out.append(_shape("benign", lx + 6, 18, True, "the finding", legend=True))
        out.append(f'<text x="{lx + 24:.1f}" y="22" fill="#333">the finding</text>')

    # lanes
    for r, y in lane_y.items():
        is_lead = r is not None and r == lead_rank
        if is_lead:
            dash = ' stroke-dasharray="5 3"' if r == silent else ""
            out.append(f'<rect x="4" y="{y - LANE_H / 2 + 2:.1f}" width="{WIDTH - 8}" height="{LANE_H - 4}" '
                       f'rx="4" fill="#fdecea" stroke="#d62728" stroke-width="1"{dash}/>')
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#d0d4d8" stroke-width="1"/>')
        label = lane_label(r)
        if is_lead:
            label += " · suspect (silent)" if r == silent else (
                " · stalled" if diagnosis.get("verdict") == "hang" else " · failed first")
        weight = ' font-weight="700" fill="#a11d1d"' if is_lead else ' fill="#333"'
        out.append(f'<text x="12" y="{y + 4:.1f}"{weight} class="lane-label">{_esc(label)}</text>')

    # x positions, zoomed to the incident on a long run (a mark before it sits at the left edge)
    window = None if whole else _incident(mode, marks)
    xs = _positions(mode, marks, x0 + PAD, x1 - PAD, out, height, window)
    if window is not None:
        out.append(f'<text x="{x1:.1f}" y="{height - 6}" fill="#555" text-anchor="end" class="zoom-note">'
                   f'zoomed to the incident · <a href="?timeline=whole"><tspan fill="#1a5fb4" '
                   f'text-decoration="underline">whole run</tspan></a></text>')
    # What the first failure did to the other ranks: an arrow to each failure that followed from it.
    if pmark is not None and pmark["rank"] in lane_y:
        px = xs[marks.index(pmark)]
        py = lane_y[pmark["rank"]]
        out.append('<defs><marker id="tl-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
                   'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 Z" fill="#d62728"/>'
                   "</marker></defs>")
        for m, x in zip(marks, xs, strict=True):
            if m is pmark or m["kind"] not in ("cascade", "teardown") or m["rank"] not in lane_y:
                continue
            y = lane_y[m["rank"]]
            if m["rank"] == pmark["rank"]:
                continue
            out.append(f'<line class="effect" x1="{px:.1f}" y1="{py:.1f}" x2="{x:.1f}" '
                       f'y2="{y + (-8 if y > py else 8):.1f}" stroke="#d62728" stroke-opacity="0.35" '
                       'stroke-width="1.2" marker-end="url(#tl-arrow)"/>')
    for m, x in sorted(zip(marks, xs, strict=True), key=lambda mx: (mx[0].get("primary", False), mx[1])):
        if m["rank"] not in lane_y:
            continue
        shape = _shape(m["kind"], x, lane_y[m["rank"]], bool(m.get("primary")), _tip(m))
        if (m["path"], int(m["line"])) in anchors:
            shape = f'<a href="#{anchor(m["path"], m["line"])}" class="mark-link">{shape}</a>'
        out.append(shape)
    if hidden:
        out.append(f'<text x="12" y="{height - 8}" fill="#666">{hidden} other rank(s) without events '
                   "are not drawn</text>")
    if not marks:
        out.append(f'<text x="{x0}" y="{TOP + 16}" fill="#666">No failure, collateral or progress line to place.'
                   "</text>")
    out.append("</svg>")
    return "\n".join(out)


def _positions(mode: str, marks: Sequence[dict[str, Any]], lo: float, hi: float, out: list[str],
               height: int, window: tuple[float, float] | None = None) -> list[float]:
    """x of every mark, and the axis drawn into `out`; within `window` only, when given (a mark
    outside it is drawn at the nearer edge)."""
    axis_y = height - 40
    if not marks:
        return []
    if window is not None:
        key = "time" if mode == "time" else "line"
        w0, w1 = window
        marks = [{**m, key: min(max(float(m[key]), w0), w1)} for m in marks]
        marks = [*marks, {**marks[0], key: w0}, {**marks[0], key: w1}]
        return _positions(mode, marks, lo, hi, out, height)[:-2]
    if mode == "time":
        times = [float(m["time"]) for m in marks]
        t0, t1 = min(times), max(times)
        span = t1 - t0
        step = next((s for s in _TIME_STEPS if span / s <= 6), _nice_step(span))
        t = 0.0
        while t <= span + 1e-9:
            x = lo + (hi - lo) * t / span
            out.append(_tick(x, axis_y, "+" + _duration(t)))
            t += step
        start = dt.datetime.fromtimestamp(t0, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        out.append(f'<text x="{lo:.1f}" y="{height - 6}" fill="#555">time since the first mark, '
                   f"{_esc(start)}</text>")
        return [lo + (hi - lo) * (tm - t0) / span for tm in times]
    if mode == "line":
        lines = [int(m["line"]) for m in marks]
        l0, l1 = min(lines), max(lines)
        if l1 == l0:  # one line: everything in the middle
            out.append(_tick((lo + hi) / 2, axis_y, f"line {l0}"))
            name = str(marks[0]["path"]).rsplit("/", 1)[-1]
            out.append(f'<text x="{lo:.1f}" y="{height - 6}" fill="#555">line number in {_esc(name)}</text>')
            return [(lo + hi) / 2 for _ in lines]
        span_l = l1 - l0
        step = max(1.0, _nice_step(span_l))
        first = math.ceil(l0 / step) * step
        v = first
        while v <= l1:
            out.append(_tick(lo + (hi - lo) * (v - l0) / span_l, axis_y, f"line {int(v)}"))
            v += step
        name = str(marks[0]["path"]).rsplit("/", 1)[-1]
        out.append(f'<text x="{lo:.1f}" y="{height - 6}" fill="#555">line number in {_esc(name)} '
                   "(the logs carry no timestamps: line order is the order of events)</text>")
        return [lo + (hi - lo) * (n - l0) / span_l for n in lines]
    # phase: columns
    def phase(m: dict[str, Any]) -> str:
        if m["kind"] == "progress":
            return "progress"
        if m.get("primary"):
            return "primary"
        return "teardown" if m["kind"] == "teardown" else "followed"

    used = [(key, label) for key, label in PHASES if any(phase(m) == key for m in marks)]
    width = (hi - lo) / len(used)
    col = {key: lo + width * i for i, (key, _) in enumerate(used)}
    for i, (key, label) in enumerate(used):
        cx = col[key]
        if i:
            out.append(f'<line x1="{cx:.1f}" y1="{TOP - 6}" x2="{cx:.1f}" y2="{axis_y}" stroke="#e3e6e9" '
                       'stroke-dasharray="3 3"/>')
        out.append(f'<text x="{cx + width / 2:.1f}" y="{axis_y + 16}" fill="#333" text-anchor="middle">'
                   f"{_esc(label)}</text>")
    out.append(f'<text x="{lo:.1f}" y="{height - 6}" fill="#555">the logs carry no timestamps and are separate '
               "files: events are grouped in the order the diagnosis reads them</text>")
    groups: dict[tuple[str, Any], list[int]] = {}
    for i, m in enumerate(marks):
        groups.setdefault((phase(m), m["rank"]), []).append(i)
    xs = [0.0] * len(marks)
    for (key, _), idx in groups.items():
        idx.sort(key=lambda i: (str(marks[i]["path"]), int(marks[i]["line"])))
        for j, i in enumerate(idx):
            xs[i] = col[key] + width * (j + 1) / (len(idx) + 1)
    return xs


def _tick(x: float, y: float, label: str) -> str:
    return (f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{y}" stroke="#eef0f2"/>'
            f'<text x="{x:.1f}" y="{y + 16}" fill="#555" text-anchor="middle">{_esc(label)}</text>')


def _summary(diagnosis: dict[str, Any], marks: Sequence[dict[str, Any]], silent: int | None) -> str:
    primary = diagnosis.get("primary") or {}
    if not primary:
        return "No failure found; the lanes show each rank's last progress."
    who = lane_label(primary.get("rank"))
    if silent is not None:
        head = f"{who} is the suspect: it went silent or its log is missing, and the others failed waiting for it."
    else:
        head = f"{who} failed first: {primary.get('id')}."
    others = sorted({m["rank"] for m in marks if not m.get("primary") and m["kind"] not in ("progress",)
                     and m["rank"] is not None})
    if others:
        head += " Collateral failures on rank(s) " + ", ".join(str(r) for r in others) + "."
    return head
