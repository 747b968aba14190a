"""Large batches through /dev/shm: run it with a tiny /dev/shm to exhaust shared memory.

Workers hand every batch to the main process through a file in /dev/shm. `--mode collate` lets the
DataLoader do that itself (torch 2.13 preallocates the file, so a full tmpfs gives ENOSPC);
`--mode write` makes the dataset map a sparse /dev/shm file and write into it, which is how the
classic SIGBUS ("killed by signal: Bus error") still happens.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset


class LargeSamples(Dataset[torch.Tensor]):
    """Samples of `mb` MiB each, like decoded images or long token windows."""

    def __init__(self, mb: int, mode: str) -> None:
        self.numel = mb * 1024 * 1024 // 4
        self.mode = mode

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> torch.Tensor:
        if self.mode == "write":
            # A shared scratch buffer in /dev/shm, as some decoders and caches do: the file is
            # sparse, so the missing space only shows when the pages are written.
            path = f"/dev/shm/lab_sample_{os.getpid()}_{index}"
            buf = torch.from_file(path, shared=True, size=self.numel, dtype=torch.float32)
            Path(path).unlink()
            buf.fill_(float(index))
            return buf.clone()
        return torch.full((self.numel,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["collate", "write"], default="collate")
    parser.add_argument("--sample-mb", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    loader = DataLoader(LargeSamples(args.sample_mb, args.mode), batch_size=1, num_workers=args.workers)
    for step, batch in enumerate(loader):
        print(f"step {step} batch_bytes={batch.numel() * 4} mean={batch.mean().item():.1f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
