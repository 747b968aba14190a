#!/usr/bin/env python3
"""Regenerate the lab corpus: run every lab case and commit what PyTorch really printed.

Writes tests/fixtures/lab/<case>/ (the captured files, byte for byte) and
tests/fixtures/lab/manifest.json (the ground truth of each capture). A capture that does not show
what its case is meant to show (a lost race, a timeout) is retried, then reported; the previous
capture of that case is kept. Cases this machine cannot run are skipped with the reason and keep
their previous capture too. `make lab` runs this.

    python scripts/capture_lab.py                 # all cases
    python scripts/capture_lab.py shm-exhausted   # some cases
    python scripts/capture_lab.py --manifest-only # ground truth changed in cases.py: rewrite it only
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))  # runs from a checkout, installed or not

from trainmedic.torch.lab import cases as lab_cases  # noqa: E402
from trainmedic.torch.lab import runner  # noqa: E402

DEFAULT_OUT = ROOT / "tests" / "fixtures" / "lab"
MANIFEST = "manifest.json"
# Where the checkout and the interpreter sat on the capturing machine says nothing about the failure:
# captures name generic places instead (the corpus's rule for personal data), so no machine's paths
# are committed.
GENERIC_ROOT = "/home/user/trainmedic"
GENERIC_PREFIX = "/usr"


def scrub(directory: Path) -> None:
    """Replace this checkout's and this interpreter's paths in every captured file."""
    swaps = [(str(ROOT).encode(), GENERIC_ROOT.encode()), (sys.base_prefix.encode(), GENERIC_PREFIX.encode())]
    for path in directory.rglob("*"):
        if path.is_file():
            data = original = path.read_bytes()
            for here, there in swaps:
                data = data.replace(here, there)
            if data != original:
                path.write_bytes(data)


def portable_command(result: runner.RunResult) -> str:
    """The command as run, with this checkout, this interpreter and the temporary dir made generic."""
    words = []
    for word in result.command:
        portable = "python" if word == sys.executable else word.replace(str(ROOT) + "/", "")
        if result.work:
            portable = portable.replace(result.work, "$TMPDIR")
        words.append(portable)
    return shlex.join(words)


def entry(case: lab_cases.Case, result: runner.RunResult, torch_version: str) -> dict[str, Any]:
    return {
        "case": case.name,
        "description": case.description,
        "files": [f"{case.name}/{f}" for f in result.files],
        **case.ground_truth(),
        "torch_version": torch_version,
        "python_version": platform.python_version(),
        "command": portable_command(result),
        "returncode": result.returncode,
        "duration_s": round(result.duration, 1),
        "captured_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
        "kernel": platform.release(),
        "notes": case.notes,
    }


def capture(case: lab_cases.Case, out: Path, attempts: int, version: str) -> dict[str, Any] | str | None:
    """Capture one case into out/<case>; the manifest entry, or a problem (str), or None if skipped."""
    problems: list[str] = []
    for attempt in range(1, attempts + 1):
        staging = Path(tempfile.mkdtemp(prefix=f".capture-{case.name}-", dir=out))
        try:
            result = runner.run_case(case, staging)
            if result.skipped is not None:
                print(f"SKIP  {case.name}: {result.skipped}", flush=True)
                return None
            problems = lab_cases.capture_problems(case, result.paths)
            if result.timed_out:
                problems.append(f"hit the time limit of {case.time_limit:.0f} s")
            if not problems:
                scrub(staging)
                target = out / case.name
                if target.exists():
                    shutil.rmtree(target)
                staging.rename(target)
                target.chmod(0o755)  # mkdtemp made it private
                print(f"OK    {case.name}: {len(result.files)} file(s), {result.duration:.1f} s", flush=True)
                return entry(case, result, version)
            print(f"retry {case.name} (attempt {attempt}): {'; '.join(problems)}", flush=True)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return "; ".join(problems)


def load_manifest(out: Path) -> dict[str, dict[str, Any]]:
    path = out / MANIFEST
    if not path.exists():
        return {}
    return {e["case"]: e for e in json.loads(path.read_text())}


def write_manifest(out: Path, entries: dict[str, dict[str, Any]]) -> None:
    """Entries in registry order; captures of cases no longer registered are dropped."""
    ordered = [entries[c.name] for c in lab_cases.CASES if c.name in entries]
    (out / MANIFEST).write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n")
    for stale in sorted(p for p in out.iterdir() if p.is_dir() and p.name not in entries):
        if not stale.name.startswith("."):
            print(f"note  {stale.name}/ is not in the manifest", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", metavar="CASE", help="cases to capture (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--attempts", type=int, default=3, help="tries per case before giving up")
    parser.add_argument(
        "--manifest-only", action="store_true", help="rewrite the ground truth of existing entries, run nothing"
    )
    args = parser.parse_args(argv)

    try:
        selected = [lab_cases.get(n) for n in args.cases] if args.cases else list(lab_cases.CASES)
    except KeyError as exc:
        parser.error(str(exc.args[0]))
    args.out.mkdir(parents=True, exist_ok=True)
    entries = load_manifest(args.out)

    if args.manifest_only:
        for case in selected:
            if case.name in entries:
                entries[case.name].update(case.ground_truth(), description=case.description, notes=case.notes)
        write_manifest(args.out, entries)
        return 0

    start = time.monotonic()
    version = runner.torch_version()
    failed: dict[str, str] = {}
    for case in selected:
        got = capture(case, args.out, args.attempts, version)
        if isinstance(got, str):
            failed[case.name] = got
            print(f"FAIL  {case.name}: {got} (previous capture kept)", flush=True)
        elif got is not None:
            entries[case.name] = got
    write_manifest(args.out, entries)
    print(f"{len(selected) - len(failed)}/{len(selected)} case(s) done in {time.monotonic() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
