"""How much does `trainmedic run` slow the job it watches? Its pass-through against a plain pipe.

    python benchmarks/bench_run.py --size 1GiB      # the figure the closing note quotes

The child is `cat` of a file of training-style output lines (a progress line each: the worst case
for the watchdog, which looks for progress in every chunk). Both commands write to /dev/null from a
warm page cache. Two figures, each a ratio of times (pipe / run: 1.0 = no slower than a pipe):

- pass-through: how long the child ran, from launch until it had written its last byte (it notes
  the time itself). This is what the training feels: a child writing into a pipe nobody drains
  blocks, so a slow reader stretches the job itself.
- end to end: the whole command's wall time, which for `run` also holds the diagnosis it makes
  after the child has exited (the job is over by then).

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


def _timed(cmd: str, stamp: Path) -> tuple[float, float]:
    """(seconds until the child noted its end, seconds of the whole command)."""
    stamp.unlink(missing_ok=True)
    start = time.time()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total = time.time() - start
    return float(stamp.read_text()) - start, total


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
    stamp = args.out / "run-child-end"
    child = f"sh -c 'cat \"$0\"; python3 -c \"import time; print(time.time())\" > \"$1\"' \"{data}\" \"{stamp}\""
    tm = f'"{sys.executable}" -m trainmedic run -- {child}'
    pipe = f"{child} | cat"
    _timed(pipe, stamp)  # warm the page cache
    runs: dict[str, list[tuple[float, float]]] = {"pipe": [], "run": []}
    for _ in range(args.reps):
        runs["pipe"].append(_timed(pipe, stamp))
        runs["run"].append(_timed(tm, stamp))
    child_s = {k: statistics.median(c for c, _ in v) for k, v in runs.items()}
    total_s = {k: statistics.median(t for _, t in v) for k, v in runs.items()}
    mb = data.stat().st_size / (1 << 20)
    print(f"{'command':8} {'child s':>8} {'MB/s':>7} {'total s':>8}")
    for k in runs:
        print(f"{k:8} {child_s[k]:8.2f} {mb / child_s[k]:7.0f} {total_s[k]:8.2f}")
    print(f"pass-through: the child runs at {child_s['pipe'] / child_s['run']:.0%} of its speed into a plain pipe "
          "(target >= 50%)")
    print(f"end to end, with the diagnosis after the exit: {total_s['pipe'] / total_s['run']:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
