"""A DataLoader worker is SIGKILLed; the main process prints the error, then lingers before exiting.

Real jobs often do this (cleanup, a final checkpoint, a launcher's grace period): the diagnosis must
arrive while the process is still alive. The time the failure was written is printed for the test.
The loader is guarded, so the guard's worker-died line (with the signal) is checked for real too.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

import torch
from torch.utils.data import DataLoader, Dataset

from trainmedic.torch import guard


class Crashing(Dataset[torch.Tensor]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index == 9:
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.full((4,), float(index))


def main() -> None:
    linger = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    try:
        for step, batch in enumerate(guard(DataLoader(Crashing(), batch_size=2, num_workers=2))):
            print(f"step {step} sum={batch.sum().item():.0f}", flush=True)
    except RuntimeError:
        traceback.print_exc()
        sys.stderr.flush()
        print(f"[test] failure-written-at={time.time():.6f} pid={os.getpid()}", file=sys.stderr, flush=True)
        time.sleep(linger)
        print("[test] exiting", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
