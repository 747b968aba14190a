"""A DataLoader worker that dies from a signal while loading one sample.

`--signal kill` sends itself SIGKILL, which is what an OOM killer or a cluster agent does;
`--signal segv` dereferences NULL through ctypes, a real native crash like a broken decoder's.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Crashing(Dataset[torch.Tensor]):
    def __init__(self, how: str, bad_index: int) -> None:
        self.how = how
        self.bad_index = bad_index

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == self.bad_index:
            # Die a moment later, as a worker does that grows before it is killed: by then the main
            # process has taken this worker's earlier batches (whose descriptors die with it).
            time.sleep(1.0)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            else:
                ctypes.string_at(0)  # reads address 0: SIGSEGV inside native code
        return torch.full((4,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--signal", choices=["kill", "segv"], required=True)
    parser.add_argument("--bad-index", type=int, default=9)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    loader = DataLoader(Crashing(args.signal, args.bad_index), batch_size=2, num_workers=args.workers)
    for step, batch in enumerate(loader):
        print(f"step {step} sum={batch.sum().item():.0f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
