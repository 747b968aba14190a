"""How much does `trainmedic run` slow the job it watches? Its pass-through against a plain pipe.

    python benchmarks/bench_run.py --size 1GiB      # the figure the closing note quotes

The child is `cat` of a file of training-style output lines (a progress line each: the worst case
for the watchdog, which looks for progress in every chunk). Both commands write to /dev/null from a
warm page cache; the figure is the ratio of their wall times (pipe / run: 1.0 = no slower than a pipe).
Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = b"step 123 loss 0.5432 lr 1e-4 grad_norm 1.234 tokens/s 51234 epoch 1 [rank 0] elapsed 0:01:02.345\n"


def _size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def _timed(cmd: str) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--size", type=_size, default=_size("1GiB"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / f"run-output-{args.size}.txt"
    if not data.exists() or data.stat().st_size != args.size // len(LINE) * len(LINE):
        with data.open("wb") as f:
            chunk = LINE * ((1 << 20) // len(LINE))
            for _ in range(args.size // len(chunk)):
                f.write(chunk)
            f.write(LINE * ((args.size % len(chunk)) // len(LINE)))
    tm = f'"{sys.executable}" -m trainmedic run -- cat "{data}"'
    pipe = f'cat "{data}" | cat'
    _timed(pipe)  # warm the page cache
    runs = {"pipe": [], "run": []}  # type: dict[str, list[float]]
    for _ in range(args.reps):
        runs["pipe"].append(_timed(pipe))
        runs["run"].append(_timed(tm))
    med = {k: statistics.median(v) for k, v in runs.items()}
    mb = data.stat().st_size / (1 << 20)
    print(f"{'command':8} {'median s':>9} {'MB/s':>8}")
    for k, v in med.items():
        print(f"{k:8} {v:9.2f} {mb / v:8.0f}")
    print(f"run passes output at {med['pipe'] / med['run']:.0%} of a plain pipe's speed (target >= 50%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
