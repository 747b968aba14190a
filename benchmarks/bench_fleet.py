#!/usr/bin/env python3
"""How fast `trainmedic fleet scan` diagnoses a fleet, how much memory it takes, and whether its report
finds the bad host planted in it.

Generates a seeded fleet: N jobs of 1 to 64 ranks (8 per host, one log file per host, `node-NN.log`),
a realistic mix of outcomes in the frameworks' own wordings (most jobs healthy; DataLoader workers
killed, CUDA out of memory, NaN losses, an exception no signature knows, and the other ranks' NCCL
timeouts as collateral), and one bad host whose GPU falls off the bus (Xid 79) in a share of the jobs it
runs. Then it times `fleet scan` into a fresh SQLite database (local processes; `--ray local` as well
when Ray is installed), times a second scan (nothing changed: nothing is read), and checks that the
report ranks the planted host first.

    python benchmarks/bench_fleet.py                  # 10,000 jobs
    python benchmarks/bench_fleet.py --jobs 500       # smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import measure  # same folder: the peak-RSS sampler of the log benchmark

OUT = Path(__file__).resolve().parent / "out"
BAD_HOST = "node-17"
HOSTS = [f"node-{i:02d}" for i in range(1, 65)]


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ",000"


def _steps(rank: int, t0: float, n: int) -> list[str]:
    return [f"[rank{rank}]:[{_stamp(t0 + 30 * i)}] INFO step {i * 50} loss {2.5 - i * 0.01:.4f} lr 3.0e-4"
            for i in range(n)]


FAILURES: dict[str, list[str]] = {
    "dataloader-worker-failure/worker-killed": [
        "[rank{r}]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed. "],
    "cuda-out-of-memory/allocator-oom": [
        "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {g} has a total "
        "capacity of 79.15 GiB of which 1.21 GiB is free. Of the allocated memory 75.02 GiB is allocated by "
        "PyTorch, and 1.42 GiB is reserved by PyTorch but unallocated."],
    "nan-loss/nonfinite-loss": [
        "[rank{r}]:[{t}] INFO step 9999 loss nan lr 3.0e-4"],
    "unclassified-failure/uncaught-exception": [
        "[rank{r}]: Traceback (most recent call last):",
        '[rank{r}]:   File "/work/train.py", line 88, in <module>',
        "[rank{r}]:     lease.renew()",
        "[rank{r}]: LeaseExpired: shard {g} has had no owner for 3 heartbeats"],
    "nvidia-xid/fallen-off-bus": [
        "[{t}] NVRM: Xid (PCI:0000:3b:00): 79, pid=48211, name=python, GPU has fallen off the bus."],
}
MIX = [("healthy", 0.55), ("dataloader-worker-failure/worker-killed", 0.14), ("cuda-out-of-memory/allocator-oom", 0.12),
       ("nan-loss/nonfinite-loss", 0.06), ("unclassified-failure/uncaught-exception", 0.07),
       ("nvidia-xid/fallen-off-bus", 0.06)]


def generate(root: Path, jobs: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    truth: dict[str, int] = {}
    for j in range(jobs):
        ranks = rng.choice([1, 2, 4, 8, 8, 16, 16, 32, 64])
        n_hosts = max(1, ranks // 8)
        hosts = rng.sample(HOSTS, n_hosts)
        outcome = rng.choices([m for m, _ in MIX], [w for _, w in MIX])[0]
        failing_host = rng.choice(hosts)
        if BAD_HOST in hosts and rng.random() < 0.35:  # the bad host's GPU falls off the bus
            outcome, failing_host = "nvidia-xid/fallen-off-bus", BAD_HOST
        elif outcome == "nvidia-xid/fallen-off-bus":
            outcome = "dataloader-worker-failure/worker-killed"  # Xid only on the bad host, plus chance
            if rng.random() < 0.1:
                outcome = "nvidia-xid/fallen-off-bus"
        truth[outcome] = truth.get(outcome, 0) + 1
        folder = root / f"job-{j:05d}"
        folder.mkdir(parents=True)
        t0 = 1_790_000_000 + j * 600
        steps = rng.randint(3, 12)
        for h_i, host in enumerate(hosts):
            lines = [f"[{_stamp(t0)}] INFO job {j} on {host}: world_size={ranks}"]
            first_rank = h_i * 8
            for r in range(first_rank, first_rank + min(8, ranks)):
                lines += _steps(r, t0, steps)
            if outcome != "healthy":
                t_fail = t0 + 30 * steps
                if host == failing_host:
                    fmt = {"r": first_rank + 1, "g": 3, "t": _stamp(t_fail)}
                    lines += [ln.format(**fmt) for ln in FAILURES[outcome]]
                elif outcome not in ("nan-loss/nonfinite-loss",):
                    lines += [f"[rank{first_rank}]:[E{time.strftime('%m%d %H:%M:%S', time.gmtime(t_fail + 1800))}"
                              f".000000000 ProcessGroupNCCL.cpp:632] [Rank {first_rank}] Watchdog caught collective "
                              f"operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                              f"Timeout(ms)=1800000) ran for 1800001 milliseconds before timing out."]
            else:
                lines.append(f"[rank{first_rank}]: Training completed.")
            (folder / f"{host}.log").write_text("\n".join(lines) + "\n")
    return {"jobs": jobs, "seed": seed, "outcomes": truth, "bad_host": BAD_HOST}


def _scan(db: Path, root: Path, extra: list[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "trainmedic", "fleet", "scan", str(root), "--db", f"sqlite:///{db}", *extra]
    run = measure(cmd, None, timeout=7200)
    peak_kb = max(run.max_rss_kb, run.tree_rss_kb)
    return {"wall_s": round(run.wall_s, 2), "cpu_s": round(run.cpu_s, 2), "peak_rss_mb": round(peak_kb / 1024, 1),
            "rc": run.rc, "stderr": run.stderr_tail[-300:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--ray", action="store_true", help="also run the Ray backend (a local Ray instance)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trainmedic-fleet-"))
    try:
        root = work / "fleet"
        t = time.perf_counter()
        truth = generate(root, args.jobs, args.seed)
        size = sum(f.stat().st_size for f in root.rglob("*.log"))
        print(f"generated {args.jobs} jobs ({size / 2**20:.0f} MiB) in {time.perf_counter() - t:.0f} s")
        results: dict[str, Any] = {"schema": "trainmedic.bench-fleet/v1", "truth": truth, "bytes": size}
        local = _scan(work / "local.db", root, [])
        local["jobs_per_s"] = round(args.jobs / local["wall_s"], 1)
        again = _scan(work / "local.db", root, [])
        results["local"], results["rescan"] = local, again
        print(f"local:  {local['wall_s']} s, {local['jobs_per_s']} jobs/s, peak RSS {local['peak_rss_mb']} MB")
        print(f"rescan: {again['wall_s']} s ({again['stderr'].strip()})")
        if args.ray:
            ray = _scan(work / "ray.db", root, ["--ray", "local"])
            ray["jobs_per_s"] = round(args.jobs / ray["wall_s"], 1)
            results["ray"] = ray
            print(f"ray:    {ray['wall_s']} s, {ray['jobs_per_s']} jobs/s, peak RSS {ray['peak_rss_mb']} MB")
        report = subprocess.run([sys.executable, "-m", "trainmedic", "fleet", "report", "--db",
                                 f"sqlite:///{work / 'local.db'}", "--format", "json"],
                                capture_output=True, text=True, check=True)
        summary = json.loads(report.stdout)
        top = summary["hosts"][0] if summary["hosts"] else {}
        results["top_host"] = top
        results["planted_host_found"] = top.get("host") == BAD_HOST and bool(top.get("significant"))
        print(f"top host: {top.get('host')} ({top.get('initiated')} of {top.get('of_failures')} failures, "
              f"p = {top.get('p_value', 1):.2g}); planted host found: {results['planted_host_found']}")
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "fleet.json").write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.out / 'fleet.json'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
