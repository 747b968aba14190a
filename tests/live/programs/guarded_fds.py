"""The lab's fd-exhaustion run, iterated through trainmedic's guard: it must warn before the crash.

RLIMIT_NOFILE is lowered here, in the subprocess; the file_descriptor sharing strategy gives every
kept tensor a descriptor, so the main process runs out after a few dozen batches.
"""

from __future__ import annotations

import resource
import sys

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset

from trainmedic.torch import guard


class ManySmall(Dataset[list[torch.Tensor]]):
    def __len__(self) -> int:
        return 256

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        return [torch.full((4,), float(index)) for _ in range(8)]


def main() -> None:
    nofile = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    mp.set_sharing_strategy("file_descriptor")  # type: ignore[no-untyped-call]  # untyped in torch
    loader = DataLoader(ManySmall(), batch_size=None, num_workers=2, prefetch_factor=2)
    kept = []
    for step, sample in enumerate(guard(loader)):
        kept.append(sample)  # a buffer of recent batches, as metric code keeps
        if step % 16 == 0:
            print(f"step {step} kept={len(kept)}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
