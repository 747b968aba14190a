"""What a failing run printed that a good run of the same job never did (cross-job comparison).

Lines become templates with Drain3, the maintained streaming template miner: numbers, addresses,
paths, times and rank prefixes are masked first, then lines that differ only in their variable
tokens join one cluster. A baseline is the set of templates a good run printed (mined from its head
and tail, bounded, see `mine`), kept as a small JSON file per job. A failing run's tail lines whose
template the baseline never saw are its new lines; they are ranked by how close to the stop they
sit, how rare they are in the failing run, and whether their words read as a failure.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainmedic.model import Line, Novel, ScanResult

SCHEMA = "trainmedic.baseline/v1"
MAX_TEMPLATES = 20_000  # a baseline file holding more keeps its most frequent ones
MAX_TEMPLATE = 1000  # characters of one template
MAX_CLUSTERS = 4096  # Drain3 forgets the least recently seen cluster beyond this: memory stays bounded
HEAD_BYTES = 8 << 20  # of each good log: its start (launch, setup) ...
TAIL_BYTES = 8 << 20  # ... and its end (steady training, the finish)
QUOTED = 10

_RANK_PREFIX = re.compile(r"^(?:\[[A-Za-z]*\d*\]:? ?)+")
# (regex, mask) in Drain3's masking format: applied in order before a line is clustered
_MASKS = [
    (r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?\b", "TIME"),
    (r"\b[IWEF]\d{3,4} \d\d:\d\d:\d\d\.\d+\b", "TIME"),
    (r"(?:/[\w.+-]+){2,}/?", "PATH"),
    (r"\b0x[0-9a-fA-F]+\b", "HEX"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "IP"),
    (r"[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", "NUM"),
]


def _miner() -> Any:
    from drain3 import TemplateMiner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.drain_max_clusters = MAX_CLUSTERS
    config.masking_instructions = [MaskingInstruction(rx, name) for rx, name in _MASKS]
    config.profiling_enabled = False
    return TemplateMiner(config=config)


_COMPILED_MASKS = [(re.compile(rx), f"<{name}>") for rx, name in _MASKS]


def mask(text: str) -> str:
    """A line with its variable parts masked, as the template miner sees it: lines of one template
    from different jobs compare equal (a fleet groups its unclassified failures by it)."""
    out = _clean(text)
    for rx, name in _COMPILED_MASKS:
        out = rx.sub(name, out)
    return out


def _clean(text: str) -> str:
    return _RANK_PREFIX.sub("", text.strip())[:1000]


@dataclass(frozen=True)
class Baseline:
    """The templates a good run printed, with how often: a job's reference for the runs that fail."""

    templates: dict[str, int]
    sources: tuple[str, ...] = ()
    lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "sources": list(self.sources), "lines": self.lines,
                "templates": [{"template": t, "count": n} for t, n in sorted(self.templates.items())]}

    @classmethod
    def from_json(cls, data: Any, name: str) -> Baseline:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("templates"), list):
            raise ValueError(f"{name}: not a trainmedic baseline (expected schema {SCHEMA})")
        out: dict[str, int] = {}
        for t in data["templates"]:
            if isinstance(t, dict) and isinstance(t.get("template"), str) and isinstance(t.get("count"), int):
                key = t["template"][:MAX_TEMPLATE]
                out[key] = out.get(key, 0) + max(0, min(t["count"], 1 << 62))
        if len(out) > MAX_TEMPLATES:  # an edited or hostile file: building its matcher must stay bounded
            out = dict(sorted(out.items(), key=lambda kv: -kv[1])[:MAX_TEMPLATES])
        lines = data.get("lines", 0)
        return cls(out, tuple(str(s)[:500] for s in data.get("sources", [])[:1000]),
                   lines if isinstance(lines, int) and lines >= 0 else 0)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Baseline:
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: cannot read baseline: {exc}") from None

    def matcher(self) -> Any:
        """A miner that knows exactly these templates, to ask whether a new line fits one of them."""
        miner = _miner()
        for template in self.templates:
            miner.add_log_message(template)
        return miner


def mine(named_lines: Iterable[tuple[str, Iterable[str]]]) -> Baseline:
    """A baseline from good logs: (name, lines) per log, the lines already bounded by the caller."""
    miner = _miner()
    seen = 0
    names = []
    for name, lines in named_lines:
        names.append(name)
        for raw in lines:
            text = _clean(raw)
            if text:
                miner.add_log_message(text)
                seen += 1
    templates = {c.get_template(): c.size for c in miner.drain.clusters}
    return Baseline(templates, tuple(names), seen)


def head_and_tail(stream: Any, size: int | None, name: str = "") -> Iterator[str]:
    """The lines of a log's first HEAD_BYTES and last TAIL_BYTES (all of it when smaller): what a
    good run says at setup and in steady training, in bounded time whatever its size. A binary file
    is refused as the reader refuses it (InputError)."""
    from trainmedic.logs.sources import InputError, looks_binary

    head = stream.read(HEAD_BYTES)
    if looks_binary(head[:65536]):
        raise InputError(f"{name or 'input'}: looks like a binary file, not a log")
    yield from head.decode("utf-8", "replace").splitlines()
    if not head or len(head) < HEAD_BYTES:
        return
    tail = b""
    while True:
        chunk = stream.read(TAIL_BYTES)
        if not chunk:
            break
        tail = (tail + chunk)[-TAIL_BYTES:]
    lines = tail.decode("utf-8", "replace").splitlines()
    yield from lines[1:]  # the first may be cut


def unseen(baseline: Baseline, scans: Sequence[ScanResult]) -> list[tuple[Line, str]]:
    """The failing run's tail lines whose template the baseline never saw, with their cleaned text.
    A traceback's frames are structure, not news: only its exception line is compared."""
    known = baseline.matcher()
    found: list[tuple[Line, str]] = []
    for s in scans:
        frames = [(t.first_line, t.last_line - 1) for t in s.tracebacks if t.path == s.path and t.exceptions]
        for ln in s.tail_lines:
            if any(a <= ln.number <= b for a, b in frames):
                continue
            text = _clean(ln.text)
            if text and known.match(text, full_search_strategy="fallback") is None:
                found.append((ln, text))
    return found


def novel_lines(found: Sequence[tuple[Line, str]], notable: set[tuple[str, int]],
                stop: tuple[str, int] | None = None) -> list[Novel]:
    """The `unseen` lines ranked, best first, one per template.

    What counts: sitting close to where the run stopped (`stop`: the input and line of the failure,
    else the first new line after the input's progress), just before it rather than after (the
    lead-up, not the teardown), being rare in the failing run and being worded as a failure
    (`notable`: (input, line) pairs)."""
    if not found:
        return []
    mined = _miner()
    keys = [mined.add_log_message(text)["cluster_id"] for _, text in found]
    counts = Counter(keys)
    out = []
    for (ln, _), key in zip(found, keys, strict=True):
        score = 0.5 / counts[key] + (0.3 if (ln.path, ln.number) in notable else 0.0)
        if stop is not None and ln.path == stop[0]:
            score += 1.0 / (1.0 + abs(ln.number - stop[1]) / 10.0) + (0.5 if ln.number <= stop[1] else 0.0)
        out.append(Novel(ln, score, mined.drain.id_to_cluster[key].get_template()))
    out.sort(key=lambda n: (-n.score, n.line.path, n.line.number))
    firsts: dict[str, Novel] = {}
    for n in out:
        firsts.setdefault(n.template, n)  # one line per new template
    return list(firsts.values())[:QUOTED]


def onset(found: Sequence[tuple[Line, str]], progress: dict[str, int]) -> tuple[str, int] | None:
    """The first new line after its input's last progress line: where the trouble began."""
    after = [ln for ln, _ in found if ln.number > progress.get(ln.path, 0)]
    first = min(after, key=lambda ln: (ln.path, ln.number), default=None)
    return (first.path, first.number) if first is not None else None
