"""Load and validate the failure library: YAML -> schema -> frozen dataclasses.

The engine never sees raw dicts; a bad file is refused here with a message that says what to fix.
"""

from __future__ import annotations

import functools
import itertools
import os
import pickle
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainmedic.model import CODE_KEYS, Cause, Entry, Fingerprint, LibraryError

__all__ = ["CALIBRATION", "CODE_KEYS", "LIBRARY_DIR", "Library", "LibraryError", "forget", "load_entry",
           "load_library"]

LIBRARY_DIR = Path(__file__).parent / "library"


def newline_problem(regex: str) -> str | None:
    """See trainmedic.schema.newline_problem."""
    from trainmedic.schema import newline_problem as check

    return check(regex)


def load_entry(path: Path) -> Entry:
    """Parse and validate one library file (trainmedic.schema does the work)."""
    from trainmedic.schema import load_entry as load

    return load(path)


CALIBRATION = "calibration.yaml"  # beside the category folders; written by `make eval` from the dev split
PSEUDO_ANSWERS = 10.0  # how many answers the mapped confidence counts for against the measured ones
MIN_RESOLVED = 3  # resolved threads before an unexplained signal is read as its likeliest cause
TIE_BREAK = 0.01  # keeps the map strictly increasing, so stronger evidence always reads as surer


@dataclass(frozen=True)
class Library:
    entries: tuple[Entry, ...]
    # cause -> (answers, right): how often that cause, given as the primary on the real-log corpus's
    # dev split, was the thread's answer. Empty: confidences stay as the evidence made them.
    calibration: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # (raw confidence, share right) points of a monotone map fitted on the same split (isotonic).
    raw_map: tuple[tuple[float, float], ...] = ()
    # cause -> how many dev cases of the real-log corpus it is the answer of: when the log cannot tell
    # competing causes apart, the likelier one in real logs is offered first.
    priors: Mapping[str, int] = field(default_factory=dict)
    # cause -> (dev cases answered with it whose thread found the cause, of which `target`, target): a
    # signal that cannot say why on its own (a SIGKILL with no sender, a bare device-side assert) is read
    # as what real threads most often found behind it.
    resolved: Mapping[str, tuple[int, int, str]] = field(default_factory=dict)
    # cause -> (dev cases answered with it, ((truth, cases), ...)): the other library causes the threads
    # found when this was the answer, commonest first; offered as readings after the log's own.
    mistaken: Mapping[str, tuple[int, tuple[tuple[str, int], ...]]] = field(default_factory=dict)

    def likeliest_reading(self, cause_id: str) -> tuple[str, float, int, int] | None:
        """What an unexplained signal most likely is (one of the causes it competes with, or the one a
        kernel record would confirm), with the Laplace-smoothed share of the resolved threads that found
        it; None while too few threads resolved one or the share does not favour it."""
        resolved, hits, target = self.resolved.get(cause_id, (0, 0, ""))
        share = (hits + 1) / (resolved + 2)
        if not target or resolved < MIN_RESOLVED or share <= 0.5:
            return None
        return target, share, resolved, hits

    def read_as_sender(self, signal: str, primary: str, first_alternative: str | None) -> bool:
        """A diagnosis that leads with the likeliest sender of `signal` and names the signal as its first
        alternative: what a kill with no kernel record is given (the lab, which sends such kills itself,
        counts it as the kill diagnosed)."""
        reading = self.likeliest_reading(signal)
        return first_alternative == signal and reading is not None and reading[0] == primary

    def calibrated(self, cause_id: str, raw: float) -> float:
        """P(the primary is the root cause). The evidence's own estimate is first mapped to how often
        answers that sure were right on real logs (any cause), then pulled towards how often this
        cause was right when given as the answer (a Beta posterior in which the mapped estimate
        counts as PSEUDO_ANSWERS answers)."""
        if not self.raw_map and not self.calibration:
            return raw
        base = _interpolate(self.raw_map, raw) + TIE_BREAK * raw
        answers, right = self.calibration.get(cause_id, (0, 0))
        return (right + PSEUDO_ANSWERS * base) / (answers + PSEUDO_ANSWERS)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @functools.cached_property
    def _by_id(self) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for e in self.entries:
            out[e.id] = e
            for alias in e.aliases:
                out.setdefault(alias, e)
        return out

    @functools.cached_property
    def _causes(self) -> dict[str, Cause]:
        return {c.full_id: c for e in self.entries for c in e.causes}

    def entry(self, entry_id: str) -> Entry:
        return self._by_id[entry_id]

    def cause(self, full_id: str) -> Cause:
        return self._causes[full_id]

    @property
    def cause_ids(self) -> frozenset[str]:
        return frozenset(self._causes)

    def causes(self) -> Iterable[Cause]:
        return self._causes.values()

    def fingerprints(self) -> Iterator[tuple[Cause, Fingerprint]]:
        for cause in self._causes.values():
            for fp in cause.fingerprints:
                yield cause, fp

    @functools.cached_property
    def _fingerprint_keys(self) -> dict[str, Fingerprint]:
        return {f"{cause.full_id}#{fp.id}": fp for cause, fp in self.fingerprints()}

    def fingerprint(self, key: str) -> Fingerprint | None:
        """The fingerprint a match names ("<entry>/<cause>#<fingerprint>"), None for a key the library lacks."""
        return self._fingerprint_keys.get(key)

    @functools.cached_property
    def linkable_ids(self) -> frozenset[str]:
        """Every entry and cause id: what a fix step may point to, and what a page links."""
        return frozenset({e.id for e in self.entries} | set(self._causes))

    # ------------------------------------------------------------ how causes relate (library data)

    @functools.cached_property
    def kill_records(self) -> frozenset[str]:
        """Causes that are kernel/cgroup OOM records: they confirm the kill of the pid they name."""
        return frozenset(c.full_id for c in self.causes() if c.kill_record)

    @functools.cached_property
    def kills(self) -> dict[str, str]:
        """kill cause -> the cause it becomes once an OOM record confirms it."""
        return {c.full_id: c.confirmed_as for c in self.causes() if c.confirmed_as}

    @functools.cached_property
    def store_overfull(self) -> str | None:
        """The cause for a store that counts more workers than the job has ranks (None: the library has none)."""
        return next((c.full_id for c in self.causes() if c.store_overfull), None)

    @functools.cached_property
    def work_mismatch(self) -> str | None:
        """The cause for ranks that ran different collectives at one sequence number (None: the library has none)."""
        return next((c.full_id for c in self.causes() if c.work_mismatch), None)

    @functools.cached_property
    def fallbacks(self) -> frozenset[str]:
        """Causes that stand for a failure no signature knows (they lead only when nothing else does)."""
        return frozenset(c.full_id for c in self.causes() if c.fallback)

    @functools.cached_property
    def wrappers(self) -> frozenset[str]:
        return frozenset(c.full_id for c in self.causes() if c.wrapper)

    @functools.cached_property
    def deaths(self) -> frozenset[str]:
        """Causes that say only that a process died: a wrapper (its message names the cause) and a bare
        death a wrapper would explain (an abort with no message, which std::terminate often is)."""
        return self.wrappers | frozenset(c.full_id for c in self.causes() if self.wrappers & set(c.competes))

    @functools.cached_property
    def aborters(self) -> frozenset[str]:
        """Causes whose watchdog ends the process with SIGABRT once it fires."""
        return frozenset(c.full_id for c in self.causes() if c.aborts_process)

    @functools.cached_property
    def in_worker(self) -> dict[str, str]:
        return {c.full_id: c.in_worker for c in self.causes() if c.in_worker}

    def frame_owner(self, frames: Iterable[str], exception: str = "") -> str | None:
        """The cause whose code a traceback runs through (a launcher's), if any, and whose reporting
        exception ends it (`exception`: the final exception's class, without its module; "" when the
        traceback's last line is no exception, e.g. a paste cut inside a frame)."""
        text = "\n".join(frames)
        return next((c.full_id for c in self.causes() if any(p in text for p in c.owns_frames)
                     and (not c.owns_exceptions or not exception or exception in c.owns_exceptions)), None)

    def raised_in(self, entry_id: str, frames: Iterable[str]) -> str | None:
        """The cause of `entry_id` whose function (`raised_in`) the innermost matching frame of a
        traceback is in: where a generic signal of the entry was raised says which of its causes it is."""
        names = {n: c.full_id for e in self.entries if e.id == entry_id for c in e.causes for n in c.raised_in}
        if not names:
            return None
        for frame in reversed(list(frames)):
            head, sep, func = frame.rpartition(", in ")
            if sep and head.lstrip().startswith("File ") and func.strip() in names:
                return names[func.strip()]
        return None

    def claimed(self, cause_id: str, frames: Sequence[str], exception: str) -> str | None:
        """The cause that claims `cause_id`'s reading of a traceback raised in its innermost frame (the last
        File line and the code lines under it) with this final exception line (the library's `claims`)."""
        last = max((i for i, f in enumerate(frames) if f.lstrip().startswith("File ")), default=-1)
        if last < 0:
            return None
        inner = "\n".join(frames[last:])
        return next((c.full_id for c in self.causes() for k in c.claims if cause_id in k.causes
                     and any(f in inner for f in k.frames) and any(x in exception for x in k.exceptions)), None)

    def keeps_inside(self, wrapper_id: str, cause_id: str) -> bool:
        """The wrapper keeps a cause of this one's category as its own finding (its `keeps_inside`): a shape
        error raised in a dataset's code is the dataset's exception, not the model's."""
        return self.entry(cause_id.partition("/")[0]).category in self.cause(wrapper_id).keeps_inside

    def worker_marks(self, entry_id: str | None = None) -> tuple[str, ...]:
        """Substrings that place a line in a worker process (of one entry, or of any)."""
        return tuple(m for e in self.entries if entry_id in (None, e.id) for m in e.worker_marks)

    def resolve(self, ident: str) -> tuple[Entry, Cause | None]:
        """`entry`, `entry/cause`, or a cause's own id when only one entry has it ("shm-exhausted")
        -> (entry, cause or None); KeyError if unknown or ambiguous."""
        entry_id, _, cause_id = ident.partition("/")
        if not cause_id and entry_id not in self._by_id:
            owners = [e for e in self.entries for c in e.causes if c.id == entry_id]
            if len(owners) == 1:
                return owners[0], owners[0].cause(entry_id)
            if owners:
                raise KeyError(f"{ident} is a cause of several entries: "
                               + ", ".join(f"{e.id}/{entry_id}" for e in owners))
        entry = self.entry(entry_id)
        return entry, (entry.cause(cause_id) if cause_id else None)


def _check_links(entries: list[Entry]) -> None:
    ids = {e.id for e in entries}
    causes = {c.full_id for e in entries for c in e.causes}
    categories = {e.category for e in entries}
    # (a lineless cause and the cause that names it go in pairs: finished_as/after_finish, silent_exit_as/silent_exit)
    for link, flag in (("finished_as", "after_finish"), ("silent_exit_as", "silent_exit")):
        flagged = {c.full_id for e in entries for c in e.causes if getattr(c, flag)}
        named = {t for e in entries for c in e.causes if (t := getattr(c, link))}
        for target in sorted(named - flagged):
            if target in causes:
                raise LibraryError(f"{target}: named by {link}, so it needs {flag}: true")
        if orphans := sorted(flagged - named):
            raise LibraryError(f"{orphans[0]}: {flag}, but no cause names it as its {link}")
    seen: dict[str, str] = {}
    for e in entries:
        for name in (e.id, *e.aliases):
            if name in seen:
                raise LibraryError(f"{e.id}: id or alias {name!r} is already used by {seen[name]}")
            seen[name] = e.id
        for rel in e.related:
            if rel not in ids:
                raise LibraryError(f"{e.id}: related id {rel!r} is not an entry in the library")
        for c in e.causes:
            fps = [f.id for f in c.fingerprints]
            if len(fps) != len(set(fps)):
                raise LibraryError(f"{c.full_id}: fingerprint ids must be unique within a cause")
            for comp in c.competes:
                if comp not in causes:
                    raise LibraryError(f"{c.full_id}: competes with unknown cause {comp!r}")
            if c.keeps_inside and not c.wrapper:
                raise LibraryError(f"{c.full_id}: keeps_inside refines a wrapper: needs wrapper")
            for cat in c.keeps_inside:
                if cat not in categories:
                    raise LibraryError(f"{c.full_id}: keeps_inside names unknown category {cat!r}")
            if c.needs_context and c.otherwise is None:
                raise LibraryError(f"{c.full_id}: needs_context needs `otherwise`, the cause it is without it")
            if c.bottomed_as and c.scale_floor is None:
                raise LibraryError(f"{c.full_id}: bottomed_as reads the scales its warnings name: needs scale_floor")
            if any(f.own_job for f in c.fingerprints) and not c.kill_record:
                raise LibraryError(f"{c.full_id}: an own_job fingerprint is an OOM record: its cause needs kill_record")
            if c.silent_exit_as and not any(f.worker_exit for f in c.fingerprints):
                raise LibraryError(f"{c.full_id}: silent_exit_as reads its worker_exit lines: it needs one")
            if c.otherwise_context and not c.needs_context:
                raise LibraryError(f"{c.full_id}: otherwise_context only refines needs_context")
            if bool(c.inside_marks) != bool(c.inside_as):
                raise LibraryError(f"{c.full_id}: inside_marks and inside_as go together")
            for key, target in (("confirmed_as", c.confirmed_as), ("in_worker", c.in_worker),
                                ("otherwise", c.otherwise), ("stranded_as", c.stranded_as),
                                ("bottomed_as", c.bottomed_as), ("finished_as", c.finished_as),
                                ("mid_run_as", c.mid_run_as), ("silent_exit_as", c.silent_exit_as),
                                ("inside_as", c.inside_as)):
                if target is not None and target not in causes:
                    raise LibraryError(f"{c.full_id}: {key} names unknown cause {target!r}")
            for claim in c.claims:
                for target in claim.causes:
                    if target not in causes:
                        raise LibraryError(f"{c.full_id}: claims names unknown cause {target!r}")
        cids = [c.id for c in e.causes]
        if len(cids) != len(set(cids)):
            raise LibraryError(f"{e.id}: cause ids must be unique within an entry")


def load_library(directory: Path | None = None) -> Library:
    """Load every `<category>/<entry>.yaml` under `directory`; by default the folder named by
    TRAINMEDIC_LIBRARY (a team's own library), else the bundled one."""
    if directory is None:
        override = os.environ.get("TRAINMEDIC_LIBRARY")
        return _cached(Path(override)) if override else _bundled()
    return _load(directory)


def _load(root: Path) -> Library:
    paths = sorted(root.glob("*/*.yaml"))
    if not paths:
        raise LibraryError(f"no library files found under {root}")
    from trainmedic import cache

    calibration_path = root / CALIBRATION
    try:
        calibration_bytes = calibration_path.read_bytes() if calibration_path.is_file() else b""
        key = cache.digest([*_code_digest(), str(root.resolve()).encode(), calibration_bytes]
                           + [p.name.encode() + b"\0" + p.read_bytes() for p in paths])
    except OSError as exc:
        raise LibraryError(f"cannot read the library under {root}: {exc}") from exc
    blob = cache.read("library", key)
    if blob is not None:
        try:
            lib = pickle.loads(blob)  # our own cache file, keyed by the library's digest
            if isinstance(lib, Library):
                return lib
        except Exception:  # a stale or corrupt cache only means parsing again
            pass
    entries = [load_entry(p) for p in paths]
    _check_links(entries)
    measured = _calibration_yaml(calibration_bytes)
    known = {c.full_id for e in entries for c in e.causes}
    lib = Library(tuple(entries), _calibration(measured, known), _raw_map(measured), _priors(measured, known),
                  _resolved(measured, known), _mistaken(measured, known))
    cache.write("library", key, pickle.dumps(lib, protocol=pickle.HIGHEST_PROTOCOL))
    return lib


def _interpolate(points: tuple[tuple[float, float], ...], x: float) -> float:
    if not points:
        return x
    if x <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y1
    return points[-1][1]


def _calibration_yaml(data: bytes) -> dict[str, object]:
    """The calibration file, parsed once; empty when the library has none."""
    if not data:
        return {}
    import yaml

    try:
        raw = yaml.safe_load(data.decode("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{CALIBRATION}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise LibraryError(f"{CALIBRATION}: expected a mapping with `causes` and `raw_map`")
    return raw


def _raw_map(measured: dict[str, object]) -> tuple[tuple[float, float], ...]:
    points = measured.get("raw_map") or []
    out: list[tuple[float, float]] = []
    for p in points if isinstance(points, list) else [None]:
        if not (isinstance(p, list) and len(p) == 2 and all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in p)):
            raise LibraryError(f"{CALIBRATION}: raw_map must be [raw, right] pairs in 0..1, sorted by raw")
        out.append((float(p[0]), float(p[1])))
    if [x for x, _ in out] != sorted(x for x, _ in out):
        raise LibraryError(f"{CALIBRATION}: raw_map must be sorted by raw confidence")
    return tuple(out)


def _calibration(measured: dict[str, object], known: set[str]) -> dict[str, tuple[int, int]]:
    """`cause: [answers, right]` lines; a malformed file is refused like a malformed entry."""
    causes = measured.get("causes") or {}
    if not isinstance(causes, dict):
        raise LibraryError(f"{CALIBRATION}: `causes` must map cause ids to [answers, right]")
    out: dict[str, tuple[int, int]] = {}
    for cause, counts in causes.items():
        ok = (isinstance(counts, list) and len(counts) == 2 and all(isinstance(n, int) for n in counts)
              and 0 <= counts[1] <= counts[0])
        if not ok:
            raise LibraryError(f"{CALIBRATION}: {cause}: expected [answers, right] with right <= answers")
        if cause not in known:
            raise LibraryError(f"{CALIBRATION}: unknown cause {cause!r}")
        out[cause] = (counts[0], counts[1])
    return out


def _mistaken(measured: dict[str, object], known: set[str]) -> dict[str, tuple[int, tuple[tuple[str, int], ...]]]:
    """`cause: [answers, {truth: cases, ...}]` lines."""
    rows = measured.get("mistaken") or {}
    if not isinstance(rows, dict):
        raise LibraryError(f"{CALIBRATION}: `mistaken` must map cause ids to [answers, {{truth: cases}}]")
    out: dict[str, tuple[int, tuple[tuple[str, int], ...]]] = {}
    for cause, row in rows.items():
        ok = (cause in known and isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)
              and isinstance(row[1], dict)
              and all(t in known and isinstance(n, int) and n > 0 for t, n in row[1].items())
              and sum(row[1].values()) <= row[0])
        if not ok:
            raise LibraryError(f"{CALIBRATION}: mistaken: {cause}: expected a known cause and [answers, "
                               f"{{known cause: cases}}] with no more cases than answers")
        out[cause] = (row[0], tuple(sorted(row[1].items(), key=lambda kv: (-kv[1], kv[0]))))
    return out


def _resolved(measured: dict[str, object], known: set[str]) -> dict[str, tuple[int, int, str]]:
    """`cause: [resolved, found, target]` lines."""
    rows = measured.get("resolved") or {}
    if not isinstance(rows, dict):
        raise LibraryError(f"{CALIBRATION}: `resolved` must map cause ids to [resolved, found, target]")
    out: dict[str, tuple[int, int, str]] = {}
    for cause, row in rows.items():
        ok = (isinstance(row, list) and len(row) == 3 and isinstance(row[0], int) and isinstance(row[1], int)
              and 0 <= row[1] <= row[0] and isinstance(row[2], str) and row[2] in known)
        if not ok or cause not in known:
            raise LibraryError(f"{CALIBRATION}: {cause}: expected [resolved, found, a known target cause]")
        out[cause] = (row[0], row[1], row[2])
    return out


def _priors(measured: dict[str, object], known: set[str]) -> dict[str, int]:
    """`cause: N` lines: how often each cause is the answer on the dev split."""
    truths = measured.get("truths") or {}
    if not isinstance(truths, dict) or not all(isinstance(n, int) and n >= 0 for n in truths.values()):
        raise LibraryError(f"{CALIBRATION}: `truths` must map cause ids to counts")
    unknown = sorted(set(truths) - known)
    if unknown:
        raise LibraryError(f"{CALIBRATION}: unknown cause {unknown[0]!r}")
    return {str(k): int(v) for k, v in truths.items()}


def forget() -> None:
    """Drop the libraries loaded so far (a file of the library was rewritten in this process)."""
    _bundled.cache_clear()
    _cached.cache_clear()


@functools.cache
def _code_digest() -> tuple[bytes, ...]:
    """The code that turns YAML into a Library: a change to it invalidates cached libraries, so a
    new field never reads back as its default from an older pickle."""
    here = Path(__file__).parent
    return tuple((here / name).read_bytes() for name in ("catalog.py", "model.py", "schema.py"))


@functools.cache
def _bundled() -> Library:
    return _load(LIBRARY_DIR)


@functools.cache
def _cached(root: Path) -> Library:
    return _load(root)
