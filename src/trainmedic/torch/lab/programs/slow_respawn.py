"""A dataset with a slow per-worker setup, iterated for a few epochs.

With persistent_workers=False every epoch starts fresh workers that repeat the setup, so each
epoch's first batch waits; with True only the first epoch does. The program prints the wait.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowSetup(Dataset[torch.Tensor]):
    def __init__(self, setup_seconds: float) -> None:
        self.setup_seconds = setup_seconds
        self.ready = False

    def __len__(self) -> int:
        return 16

    def __getitem__(self, index: int) -> torch.Tensor:
        if not self.ready:  # per process: opening shards, building an index, loading a tokenizer
            time.sleep(self.setup_seconds)
            self.ready = True
        return torch.full((4,), float(index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--persistent-workers", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument("--setup-seconds", type=float, default=2.0)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    loader = DataLoader(
        SlowSetup(args.setup_seconds), batch_size=4, num_workers=2, persistent_workers=args.persistent_workers
    )
    for epoch in range(args.epochs):
        start = time.monotonic()
        steps = 0
        for steps, _batch in enumerate(loader, 1):
            if steps == 1:
                wait = time.monotonic() - start
                print(
                    f"epoch {epoch}: first batch after {wait:.2f} s (persistent_workers={args.persistent_workers})",
                    flush=True,
                )
        print(f"epoch {epoch}: {steps} batches in {time.monotonic() - start:.2f} s", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
