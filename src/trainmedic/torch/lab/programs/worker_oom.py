"""A DataLoader worker that needs more memory than it may have.

`--limit rlimit` caps the worker's address space (RLIMIT_AS) in worker_init_fn: the allocation
fails inside the worker and comes back as an exception. `--limit cgroup` moves the worker into a
memory cgroup made by the lab runner: the kernel's OOM killer then SIGKILLs it, as on a real host.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


class Hungry(Dataset[torch.Tensor]):
    """One sample builds a large in-memory cache, like a decoded video or a lookup table."""

    def __init__(self, hog_mb: int, bad_index: int) -> None:
        self.hog_mb = hog_mb
        self.bad_index = bad_index

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == self.bad_index:
            time.sleep(1.0)  # let the main process take this worker's earlier batches first
            cache = [torch.ones(64 * 1024 * 1024 // 4) for _ in range(self.hog_mb // 64)]
            return torch.full((4,), float(len(cache)))
        return torch.full((4,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", choices=["rlimit", "cgroup"], required=True)
    parser.add_argument("--cgroup", default="", help="cgroup directory the workers join (--limit cgroup)")
    parser.add_argument("--headroom-mb", type=int, default=256, help="RLIMIT_AS above the worker's size")
    parser.add_argument("--hog-mb", type=int, default=2048)
    parser.add_argument("--bad-index", type=int, default=5)
    args = parser.parse_args()

    def worker_init_fn(worker_id: int) -> None:
        if args.limit == "rlimit":
            limit = _vm_size() + args.headroom_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        else:
            (Path(args.cgroup) / "cgroup.procs").write_text(f"{os.getpid()}\n")

    loader = DataLoader(Hungry(args.hog_mb, args.bad_index), batch_size=2, num_workers=2, worker_init_fn=worker_init_fn)
    for step, batch in enumerate(loader):
        print(f"step {step} sum={batch.sum().item():.0f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
