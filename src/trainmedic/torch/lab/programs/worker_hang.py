"""Workers forked while another thread holds a lock the dataset needs: they block forever.

The lock is held by a background thread (a metrics or logging thread) exactly when the
DataLoader forks its workers; the child gets the lock locked and no thread to release it.
`--timeout N` turns the stall into "DataLoader timed out after N seconds"; `--timeout 0`
(the default in PyTorch) waits forever, so the log just stops.
"""

from __future__ import annotations

import argparse
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

STATS_LOCK = threading.Lock()


class Locked(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        with STATS_LOCK:  # e.g. to update shared counters
            return torch.full((4,), float(index))


def flush_stats(holding: threading.Event) -> None:
    with STATS_LOCK:
        holding.set()
        time.sleep(2.0)  # a slow flush, while the workers are being forked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=int, default=0, help="DataLoader(timeout=...), 0 = wait forever")
    args = parser.parse_args()

    dataset = Locked()
    print("epoch 0 warm-up", flush=True)
    for step, batch in enumerate(DataLoader(dataset, batch_size=4, num_workers=0)):
        if step < 2:
            print(f"warm-up step {step} sum={batch.sum().item():.0f}", flush=True)

    holding = threading.Event()
    threading.Thread(target=flush_stats, args=(holding,), daemon=True).start()
    holding.wait()
    loader = DataLoader(dataset, batch_size=4, num_workers=2, timeout=args.timeout)
    print(f"epoch 1 with num_workers=2 timeout={args.timeout}", flush=True)
    for step, batch in enumerate(loader):
        print(f"step {step} sum={batch.sum().item():.0f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
