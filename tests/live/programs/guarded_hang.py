"""A guarded DataLoader whose worker blocks forever in __getitem__ (a read that never returns).

Run with TRAINMEDIC_PY_SPY pointing at a failing binary, the watchdog must fall back to the
guard's SIGUSR1 faulthandler dump, in the main process and in the worker.
"""

from __future__ import annotations

import threading

import torch
from torch.utils.data import DataLoader, Dataset

from trainmedic.torch import guard


class Stuck(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index >= 8:
            threading.Event().wait()  # a network read without timeout
        return torch.full((4,), float(index))


def main() -> None:
    loader = guard(DataLoader(Stuck(), batch_size=2, num_workers=1))
    for step, batch in enumerate(loader):
        print(f"step {step} sum={batch.sum().item():.0f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
