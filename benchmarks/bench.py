#!/usr/bin/env python3
"""Benchmark `trainmedic diagnose` against `rg -f` over the same fingerprints, on the same log, in one run.

    python benchmarks/bench.py [--size 1GiB] [--keep] [--out benchmarks/out/]

Generates (or reuses) a seeded multi-rank log with gen_log.py, exports the library's fingerprints to
a patterns file, checks that rg accepts each one, then times several alternating repetitions of each
command (median wall time, CPU time, peak RSS) from a warm page cache. Prints a table and writes
the same to <out>/results.json. Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gen_log

HERE = Path(__file__).resolve().parent
DEFAULT_TM_CMD = "trainmedic diagnose {log} --json"
MiB = 1 << 20
TIME = Path("/usr/bin/time")


# ---------------------------------------------------------------------------------------------
# fingerprints


@dataclass(frozen=True)
class Pattern:
    """One fingerprint as both tools get it."""

    id: str
    regex: str  # with a leading (?i) when the fingerprint ignores case



# Commands run as installed tools run: with Python's bytecode cache. An environment that forbids
# writing .pyc files (PYTHONDONTWRITEBYTECODE, set on some CI machines) would make every trainmedic run
# compile its sources first, a cost no installed copy pays.
RUN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

def _walk_json(node: Any, ids: tuple[str, ...] = ()) -> Iterator[Pattern]:
    """Every object with a 'regex' in `trainmedic library list --json`, whatever its nesting."""
    if isinstance(node, dict):
        here = (*ids, str(node["id"])) if isinstance(node.get("id"), str) else ids
        regex = node.get("regex")
        if isinstance(regex, str):
            yield Pattern("/".join(here), ("(?i)" if node.get("ignore_case") else "") + regex)
        for key, value in node.items():
            if key != "regex":
                yield from _walk_json(value, here)
    elif isinstance(node, list):
        for item in node:
            yield from _walk_json(item, ids)


def export_patterns(trainmedic: list[str]) -> tuple[list[Pattern], str]:
    """The library's fingerprints and where they came from (CLI JSON, load_library, or the YAML files)."""
    try:
        proc = subprocess.run(
            [*trainmedic, "library", "list", "--json"], capture_output=True, text=True, timeout=120, check=False
        )
        if proc.returncode == 0:
            found = list(_walk_json(json.loads(proc.stdout)))
            if found:
                return found, "trainmedic library list --json"
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    try:
        from trainmedic import catalog  # optional: only when the CLI cannot say
    except ImportError as exc:
        raise SystemExit(f"bench: cannot read the library ({exc}); install trainmedic in this Python") from exc

    def pattern(full_id: str, fp: Any) -> Pattern:
        return Pattern(f"{full_id}/{fp.id}", ("(?i)" if getattr(fp, "ignore_case", False) else "") + fp.regex)

    try:
        lib = catalog.load_library()
        return [pattern(c.full_id, f) for c, f in lib.fingerprints()], "trainmedic.catalog.load_library()"
    except Exception:  # a library mid-edit may fail its cross-checks; read the files one by one
        out, bad = [], []
        for path in sorted(catalog.LIBRARY_DIR.glob("*/*.yaml")):
            try:
                entry = catalog.load_entry(path)
            except catalog.LibraryError:
                bad.append(path.name)
                continue
            out += [pattern(f"{entry.id}/{c.id}", f) for c in entry.causes for f in c.fingerprints]
        note = f"; skipped invalid {', '.join(bad)}" if bad else ""
        return out, f"trainmedic.catalog.load_entry() per file (load_library() failed its checks{note})"


def rg_rejects(rg: str, pattern: str, extra: Sequence[str]) -> str | None:
    """rg's error message for `pattern`, or None when rg accepts it."""
    proc = subprocess.run([rg, *extra, "-e", pattern, "-"], input=b"", capture_output=True, timeout=30, check=False)
    if proc.returncode in (0, 1):
        return None
    return proc.stderr.decode(errors="replace").strip() or f"exit {proc.returncode}"


# ---------------------------------------------------------------------------------------------
# measuring


@dataclass
class Run:
    """One timed command."""

    wall_s: float
    cpu_s: float
    rc: int
    max_rss_kb: int  # GNU time's %M: the largest single process (0 without /usr/bin/time)
    tree_rss_kb: int  # sampled peak of the summed RSS of the process and its children
    tree_anon_kb: int  # same, anonymous memory only (no page cache from mmap'd input)
    # same, proportional set size: a page shared by n processes counts 1/n in each (a forked worker's inherited
    # pages and the shared libraries both processes map are counted once, not twice as in the RSS sum)
    tree_pss_kb: int = 0
    timed_out: bool = False
    stderr_tail: str = ""


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
    return out


def _rss(pid: int) -> tuple[int, int]:
    rss = anon = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, anon


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def measure(cmd: Sequence[str], stdout: Path | None, timeout: float) -> Run:
    """Run `cmd` (stdout to `stdout` or /dev/null), returning wall, CPU, exit code and peak memory.

    Peak RSS comes from GNU time when installed: a child forked by this (large) Python process
    would inherit its high-water mark across exec, so wait4's ru_maxrss cannot be trusted here.
    """
    peak = [0, 0, 0]
    wrapped = TIME.exists()
    killed = threading.Event()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with (
        tempfile.TemporaryDirectory() as tmp,
        (stdout or Path(os.devnull)).open("wb") as out,
        (Path(tmp) / "stderr").open("w+b") as err,
    ):
        stats = Path(tmp) / "time"
        argv = [str(TIME), "-f", "%M", "-o", str(stats), *cmd] if wrapped else list(cmd)
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
                                env=RUN_ENV)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                pids = _descendants(proc.pid)[1 if wrapped else 0 :]
                sizes = [_rss(p) for p in pids]
                peak[0] = max(peak[0], sum(s[0] for s in sizes))
                peak[1] = max(peak[1], sum(s[1] for s in sizes))
                peak[2] = max(peak[2], sum(_pss(p) for p in pids))
                done.wait(0.02)

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            rc = proc.wait()
        finally:
            timer.cancel()
            done.set()
            sampler.join()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        max_rss = 0
        if wrapped:
            with contextlib.suppress(OSError, ValueError, IndexError):
                max_rss = int(stats.read_text().split()[-1])
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    return Run(
        wall_s=wall,
        cpu_s=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        rc=rc,
        max_rss_kb=max_rss,
        tree_rss_kb=peak[0],
        tree_anon_kb=peak[1],
        tree_pss_kb=peak[2],
        timed_out=killed.is_set(),
        stderr_tail="\n".join(tail),
    )


@dataclass
class Tool:
    """A measured command and its repetitions."""

    name: str
    cmd: list[str]
    ok_rcs: tuple[int, ...]
    runs: list[Run] = field(default_factory=list)

    def ok(self) -> bool:
        """Every repetition exited with an expected code."""
        return bool(self.runs) and all(r.rc in self.ok_rcs and not r.timed_out for r in self.runs)

    def summary(self, size: int) -> dict[str, Any]:
        """Medians (time) and maxima (memory) over the repetitions."""
        if not self.runs:
            return {"name": self.name, "cmd": shlex.join(self.cmd), "ok": False, "runs": []}
        wall = statistics.median(r.wall_s for r in self.runs)
        peak_kb = max(max(r.max_rss_kb, r.tree_rss_kb) for r in self.runs)
        return {
            "name": self.name,
            "cmd": shlex.join(self.cmd),
            "ok": self.ok(),
            "seconds": round(wall, 3),
            "cpu_seconds": round(statistics.median(r.cpu_s for r in self.runs), 3),
            "mb_per_s": round(size / MiB / wall, 1) if wall > 0 else None,
            "peak_rss_mb": round(peak_kb / 1024, 1),
            "peak_anon_mb": round(max(r.tree_anon_kb for r in self.runs) / 1024, 1),
            "peak_pss_mb": round(max(r.tree_pss_kb for r in self.runs) / 1024, 1),
            "timed_out": any(r.timed_out for r in self.runs),
            "runs": [asdict(r) for r in self.runs],
        }


# ---------------------------------------------------------------------------------------------
# the same matches?


def sample_log(log: Path, dest: Path, each: int = 4 * MiB) -> Path:
    """The first and last `each` bytes of `log` (whole lines): the header, noise and the planted tail."""
    size = log.stat().st_size
    with log.open("rb") as fh, dest.open("wb") as out:
        if size <= 2 * each:
            shutil.copyfileobj(fh, out)
            return dest
        head = fh.read(each)
        out.write(head[: head.rfind(b"\n") + 1])
        fh.seek(size - each)
        tail = fh.read()
        out.write(tail[tail.find(b"\n") + 1 :])
    return dest


def python_matches(log: Path, patterns: Sequence[Pattern], ascii_only: bool) -> set[int]:
    """Line numbers (1-based) where any pattern matches, by Python's `re` (small files only)."""
    data = log.read_bytes().decode("utf-8", errors="surrogateescape")
    starts = [0] + [m.end() for m in re.finditer("\n", data)]
    flags = re.ASCII if ascii_only else 0
    lines: set[int] = set()
    for p in patterns:
        for m in re.compile(p.regex, flags).finditer(data):
            lines.add(bisect_right(starts, m.start()))
    return lines


def rg_matches(rg: str, extra: Sequence[str], patterns_file: Path, log: Path) -> set[int]:
    """Line numbers where rg finds any pattern."""
    proc = subprocess.run(
        [rg, *extra, "-f", str(patterns_file), "-n", "--no-filename", "-a", "-o", "--", str(log)],
        capture_output=True,
        check=False,
    )
    return {int(line.split(b":", 1)[0]) for line in proc.stdout.splitlines() if line[:1].isdigit()}


# ---------------------------------------------------------------------------------------------


def _trainmedic() -> list[str]:
    """The trainmedic of this Python's environment, else the one on PATH, else `python -m trainmedic`."""
    sibling = Path(sys.executable).parent / "trainmedic"
    if sibling.exists():
        return [str(sibling)]
    found = shutil.which("trainmedic")
    return [found] if found else [sys.executable, "-m", "trainmedic"]


def _tm_cmd(template: str, log: Path) -> list[str]:
    words = [w.replace("{log}", str(log)) for w in shlex.split(template)]
    if words and words[0] == "trainmedic":
        words = [*_trainmedic(), *words[1:]]
    return words


def _warm(path: Path) -> None:
    with path.open("rb") as fh:
        while fh.read(8 * MiB):
            pass


def _prepare_log(args: argparse.Namespace) -> tuple[Path, dict[str, Any] | None, bool, float | None]:
    """(log, truth, generated_here, generation seconds)."""
    if args.log:
        if args.log.suffix in (".gz", ".zst", ".bz2", ".xz"):
            raise SystemExit("bench: --log must be uncompressed, so that rg and trainmedic read the same bytes")
        if not args.log.is_file():
            raise SystemExit(f"bench: --log {args.log}: no such file (generate one with --size and --keep)")
        return args.log, None, False, None
    name = f"bench-{gen_log.format_size(args.size)}-seed{args.seed}-ranks{args.ranks}-{args.profile}.log"
    log = args.out / name
    truth_path = log.with_suffix(".truth.json")
    if log.exists() and truth_path.exists():
        truth = json.loads(truth_path.read_text(encoding="utf-8"))
        wanted = (args.size, args.seed, args.ranks, gen_log.generator_id())
        if log.stat().st_size == args.size and wanted == tuple(
            truth.get(k) for k in ("size", "seed", "ranks", "generator")
        ):
            print(f"reusing {log}", file=sys.stderr)
            return log, truth, False, None
    print(f"generating {log} ({gen_log.format_size(args.size)}) ...", file=sys.stderr)
    started = time.perf_counter()
    truth_obj = gen_log.generate(log, args.size, args.ranks, args.seed, profile=args.profile)
    elapsed = time.perf_counter() - started
    gen_log.write_truth(truth_obj, truth_path)
    print(f"  generated in {elapsed:.1f}s", file=sys.stderr)
    return log, json.loads(truth_path.read_text(encoding="utf-8")), True, elapsed


def _check_diagnosis(path: Path, truth: dict[str, Any] | None) -> dict[str, Any]:
    try:
        got = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"checked": False, "why": "trainmedic did not print a JSON object"}
    primary = got.get("primary") if isinstance(got, dict) else None
    result: dict[str, Any] = {
        "checked": truth is not None,
        "verdict": got.get("verdict") if isinstance(got, dict) else None,
        "primary": primary.get("id") if isinstance(primary, dict) else None,
        "rank": primary.get("rank") if isinstance(primary, dict) else None,
    }
    if truth:
        exp = truth["expected"]
        result["expected"] = {"verdict": exp["verdict"], "primary": exp["primary"], "rank": exp["rank"]}
        result["correct"] = (result["verdict"], result["primary"], result["rank"]) == (
            exp["verdict"],
            exp["primary"],
            exp["rank"],
        )
    return result


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


def _fmt(value: Any, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def print_table(res: dict[str, Any]) -> None:
    """The human-readable summary of results.json."""
    head = ["size", "rg s", "trainmedic s", "ratio", "tm peak RSS MB", "rg MB/s", "tm MB/s"]
    rg, tm = res["tools"]["rg"], res["tools"]["trainmedic"]
    cells = [
        res["size_label"],
        _fmt(rg.get("seconds")),
        _fmt(tm.get("seconds")) if tm.get("ok") else "failed",
        _fmt(res.get("ratio")),
        _fmt(tm.get("peak_rss_mb"), ".0f") if tm.get("ok") else "-",
        _fmt(rg.get("mb_per_s"), ".0f"),
        _fmt(tm.get("mb_per_s"), ".0f") if tm.get("ok") else "-",
    ]
    widths = [max(len(h), len(c)) for h, c in zip(head, cells, strict=True)]
    print(_row(head, widths))
    print(_row(cells, widths))
    print()
    print(f"{'command':<20} {'median s':>9} {'cpu s':>7} {'MB/s':>7} {'peak RSS MB':>12} {'peak PSS MB':>12}  ok")
    for t in res["tools"].values():
        if not t.get("runs"):
            continue
        late = " (hit the time cap)" if t.get("timed_out") else ""
        print(
            f"{t['name']:<20} {_fmt(t.get('seconds')):>9} {_fmt(t.get('cpu_seconds')):>7} "
            f"{_fmt(t.get('mb_per_s'), '.1f'):>7} {_fmt(t.get('peak_rss_mb'), '.0f'):>12} "
            f"{_fmt(t.get('peak_pss_mb'), '.0f'):>12}  "
            f"{'yes' if t.get('ok') else 'NO'}{late}"
        )
    print()
    pats = res["patterns"]
    print(f"patterns: {pats['count']} from {pats['source']}; rg rejected {len(pats['rejected'])}")
    for r in pats["rejected"]:
        print(f"  rejected {r['id']}: {r['error'].splitlines()[-1]}")
    if res.get("same_matches") is not None:
        print(
            f"matching lines of the sample: rg = Python re (ASCII): {res['same_matches']}; "
            f"ASCII = Unicode semantics: {res.get('ascii_same_as_unicode')}"
        )
    diag = res.get("diagnosis") or {}
    if diag.get("checked"):
        print(
            f"diagnosis: {diag.get('verdict')} {diag.get('primary')} rank {diag.get('rank')} -> "
            f"{'correct' if diag.get('correct') else 'WRONG, expected ' + str(diag.get('expected'))}"
        )
    if tm.get("runs") and not tm.get("ok"):
        print(f"trainmedic failed: {tm['runs'][-1]['stderr_tail']}")
    print(
        f"targets: ratio >= 2 (got {_fmt(res.get('ratio'))}), peak RSS <= 300 MB (got "
        f"{_fmt(tm.get('peak_rss_mb'), '.0f') if tm.get('ok') else '-'})"
    )
    if res.get("one_process_ratio") is not None:
        print(f"held to one process (stdin, compressed, live): ratio {res['one_process_ratio']:.2f}")
    if res.get("baseline_overhead") is not None:
        base = res["tools"]["trainmedic_baseline"]
        print(f"template mining with --baseline: +{res['baseline_overhead']:.0%} time (target <= +30 %), "
              f"peak RSS {_fmt(base.get('peak_rss_mb'), '.0f')} MB (target <= 300)")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=gen_log.parse_size, default=gen_log.parse_size("1GiB"))
    ap.add_argument("--profile", choices=sorted(gen_log.PROFILES), default="sparse",
                    help="the generated log: sparse (a quiet run) or dense (a verbose one; see gen_log.py)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--out", type=Path, default=HERE / "out", help="where the log and results.json go")
    ap.add_argument("--keep", action="store_true", help="keep the generated log for the next run")
    ap.add_argument("--log", type=Path, help="benchmark this existing log instead of generating one")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each command (median taken)")
    ap.add_argument("--tm-cmd", default=DEFAULT_TM_CMD, help="trainmedic command; {log} is the log path")
    ap.add_argument("--timeout", type=float, default=600, help="cap on one command, seconds")
    ap.add_argument("--no-baseline", action="store_true", help="skip timing diagnose --baseline (template mining)")
    ap.add_argument(
        "--no-unicode-rg",
        action="store_true",
        help="skip timing rg in its default Unicode mode (once, on the first and last 512 KiB)",
    )
    ap.add_argument(
        "--no-check",
        action="store_true",
        help="skip comparing rg's matching lines with Python re's (on the log's first and last 4 MiB)",
    )
    args = ap.parse_args(argv)

    rg = shutil.which("rg")
    if not rg:
        print("bench: ripgrep (rg) is not installed: apt-get install -y ripgrep", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    log, truth, generated, gen_seconds = _prepare_log(args)
    size = log.stat().st_size
    try:
        patterns, source = export_patterns(_trainmedic())
        ascii_flags = ["--no-unicode"]
        rejected = []
        accepted = []
        for p in patterns:
            err = rg_rejects(rg, p.regex, ascii_flags) or rg_rejects(rg, p.regex, [])
            if err:
                rejected.append({"id": p.id, "regex": p.regex, "error": err})
            else:
                accepted.append(p)
        patterns_file = args.out / "patterns.txt"
        patterns_file.write_text("".join(p.regex + "\n" for p in accepted), encoding="utf-8")

        sample = sample_log(log, args.out / "sample.log")
        same = same_unicode = None
        if not args.no_check:
            py = python_matches(sample, accepted, ascii_only=True)
            same = py == rg_matches(rg, ascii_flags, patterns_file, sample)
            same_unicode = py == python_matches(sample, accepted, ascii_only=False)

        base = ["-f", str(patterns_file), "--no-filename", "-a"]
        tools = {
            "rg": Tool("rg -n --no-unicode", [rg, *ascii_flags, *base, "-n", "--", str(log)], (0, 1)),
            "rg_count": Tool("rg -c --no-unicode", [rg, *ascii_flags, *base, "-c", "--", str(log)], (0, 1)),
            "trainmedic": Tool("trainmedic", _tm_cmd(args.tm_cmd, log), (0, 1)),
            # The path every input that cannot be cut into ranges takes (stdin, a compressed log, a live
            # stream, a plain file under 64 MiB): one process reading block after block.
            "trainmedic_one_process": Tool("trainmedic, 1 process",
                                           ["env", "TRAINMEDIC_JOBS=1", *_tm_cmd(args.tm_cmd, log)], (0, 1)),
        }
        if not args.no_baseline:
            # Template mining against a good run of the same job (issue: at most +30 % time): the good
            # run is the log's first 64 MiB (progress, before anything failed), saved as a baseline.
            good = args.out / "good.log"
            with log.open("rb") as fh, good.open("wb") as out:
                head = fh.read(64 * MiB)
                out.write(head[: head.rfind(b"\n") + 1])
            saved = args.out / "job.baseline"
            subprocess.run([*_trainmedic(), "baseline", "save", str(good), "-o", str(saved)], check=True,
                           capture_output=True, timeout=args.timeout)
            good.unlink()
            tools["trainmedic_baseline"] = Tool("trainmedic --baseline",
                                                [*_tm_cmd(args.tm_cmd, log), "--baseline", str(saved)], (0, 1))
        diag_path = args.out / "diagnosis.json"
        print(f"warming the page cache with {log} ...", file=sys.stderr)
        _warm(log)
        # ... and trainmedic's library cache: a first run after the library changed compiles its matcher
        # in-process (seconds, and 40+ MiB more), which is not what a diagnosis costs.
        tiny = args.out / "warm.log"
        tiny.write_bytes(b"step 1 loss 0.5\n")
        subprocess.run(_tm_cmd(args.tm_cmd, tiny), capture_output=True, timeout=args.timeout, env=RUN_ENV,
                       check=False)  # (its exit code is the diagnosis, 0 or 1)
        tiny.unlink()
        for rep in range(args.reps):
            order = [k for k in ("rg", "rg_count", "trainmedic", "trainmedic_one_process", "trainmedic_baseline")
                     if k in tools]
            order = order if rep % 2 == 0 else order[::-1]
            for key in order:
                tool = tools[key]
                run = measure(tool.cmd, diag_path if key == "trainmedic" else None, args.timeout)
                tool.runs.append(run)
                print(f"  rep {rep + 1}/{args.reps} {tool.name}: {run.wall_s:.2f}s rc={run.rc}", file=sys.stderr)
        summaries = {k: t.summary(size) for k, t in tools.items()}
        if not args.no_unicode_rg:
            # rg's default Unicode mode: a Unicode \b makes its DFA give up on non-ASCII text (tqdm bars),
            # so it crawls; timed once, on 1 MiB only, to show by how much.
            small = sample_log(log, args.out / "sample-small.log", each=MiB // 2)
            uni = Tool("rg -n unicode, 1 MiB", [rg, *base, "-n", "--", str(small)], (0, 1))
            uni.runs.append(measure(uni.cmd, None, args.timeout))
            summaries["rg_unicode_sample"] = uni.summary(small.stat().st_size)
        rg_s, tm_s = summaries["rg"].get("seconds"), summaries["trainmedic"].get("seconds")
        rg_version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False).stdout
        rg_version = rg_version.split("\n")[0]
        ratio = round(rg_s / tm_s, 2) if rg_s and tm_s and tools["trainmedic"].ok() else None
        one_s = summaries["trainmedic_one_process"].get("seconds")
        one_ratio = round(rg_s / one_s, 2) if rg_s and one_s and tools["trainmedic_one_process"].ok() else None
        base_s = summaries.get("trainmedic_baseline", {}).get("seconds")
        overhead = round(base_s / tm_s - 1.0, 3) if base_s and tm_s else None
        results: dict[str, Any] = {
            "schema": "trainmedic.bench/v1",
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "size_bytes": size,
            "size_label": gen_log.format_size(size),
            "log": str(log),
            "generated_seconds": round(gen_seconds, 1) if gen_seconds is not None else None,
            "reps": args.reps,
            "ratio": ratio,
            "ratio_meaning": "rg seconds / trainmedic seconds (median wall); > 1 means trainmedic is faster",
            "one_process_ratio": one_ratio,
            "one_process_meaning": "rg seconds / seconds of trainmedic held to one process (TRAINMEDIC_JOBS=1), "
            "as stdin, compressed logs and live streams are read",
            "rg_mode": "--no-unicode (ASCII \\b \\d \\w, as hyperscan without HS_FLAG_UCP); Unicode mode is "
            "timed separately on a sample because its \\b is pathologically slow on non-ASCII text",
            "baseline_overhead": overhead,
            "baseline_overhead_meaning": "trainmedic --baseline seconds / trainmedic seconds - 1 (template mining "
            "against a saved good run)",
            "targets": {"ratio_min": 2.0, "peak_rss_mb_max": 300, "baseline_overhead_max": 0.30},
            "tools": summaries,
            "patterns": {
                "count": len(accepted),
                "source": source,
                "file": str(patterns_file),
                "rejected": rejected,
            },
            "same_matches": same,
            "ascii_same_as_unicode": same_unicode,
            "diagnosis": _check_diagnosis(diag_path, truth) if tools["trainmedic"].runs else None,
            "truth": truth,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "rg": rg_version,
                "loadavg": os.getloadavg(),
            },
        }
        (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print_table(results)
        print(f"\nwrote {args.out / 'results.json'}")
    finally:
        (args.out / "sample.log").unlink(missing_ok=True)
        (args.out / "sample-small.log").unlink(missing_ok=True)
        (args.out / "job.baseline").unlink(missing_ok=True)
        if generated and not args.keep:
            log.unlink(missing_ok=True)
            log.with_suffix(".truth.json").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
