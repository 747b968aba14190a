"""Byte-identical check for refactors: the diagnosis JSON of every lab capture, every library fixture
(the whole file and each annotated line alone), the bundled example, and the lab captures with each
recorded machine's facts and the saved kernel logs.

    python scripts/golden.py --write /tmp/golden.json   # before the change
    python scripts/golden.py --check /tmp/golden.json   # after it: lists every input whose JSON changed
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "tests" / "fixtures" / "lab"
MACHINES = ROOT / "tests" / "fixtures" / "machine"
LIBRARY = ROOT / "src" / "trainmedic" / "library"


def cases() -> Iterator[tuple[str, list[str]]]:
    """(name, trainmedic diagnose arguments)."""
    manifest = json.loads((LAB / "manifest.json").read_text(encoding="utf-8"))
    for case in manifest:
        files = [str(LAB / f) for f in case["files"]]
        yield f"lab/{case['case']}", files
    yield "example", [str(ROOT / "examples" / "ddp-worker-killed")]
    for log in sorted(LIBRARY.glob("*/*.log")):
        yield f"fixture/{log.stem}", [str(log)]
    kernel = sorted((MACHINES / "kernel-log").iterdir())
    for case in manifest[:8]:
        files = [str(LAB / f) for f in case["files"]]
        for machine in ("bare-metal", "docker", "kubernetes"):
            yield f"facts/{machine}/{case['case']}", [*files, "--facts", str(MACHINES / machine / "snapshot.json")]
        for k in kernel:
            yield f"dmesg/{k.name}/{case['case']}", [*files, "--dmesg", str(k)]


def line_cases() -> Iterator[tuple[str, bytes]]:
    for log in sorted(LIBRARY.glob("*/*.log")):
        lines = log.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.startswith("#! "):
                continue
            if i and lines[i - 1].startswith("#! "):
                yield f"line/{log.stem}:{i + 1}", (line + "\n").encode()


def collect() -> dict[str, str]:
    out: dict[str, str] = {}
    exe = [sys.executable, "-m", "trainmedic", "diagnose", "--json", "--no-progress"]
    for name, args in cases():
        proc = subprocess.run([*exe, *args], capture_output=True, check=False, cwd=ROOT)
        out[name] = f"rc={proc.returncode}\n{proc.stdout.decode()}{proc.stderr.decode()}"
    # Single lines in-process through the public API (thousands of them: a process each would be slow).
    import trainmedic

    for name, data in line_cases():
        out[name] = json.dumps(trainmedic.diagnose(data).to_json(), sort_keys=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path)
    g.add_argument("--check", type=Path)
    args = p.parse_args()
    now = collect()
    if args.write:
        args.write.write_text(json.dumps(now, indent=1, sort_keys=True), encoding="utf-8")
        print(f"{len(now)} diagnoses written to {args.write}")
        return 0
    before = json.loads(args.check.read_text(encoding="utf-8"))
    changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    for k in changed:
        print(f"changed: {k}")
    print(f"{len(now)} diagnoses, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
