"""Many small tensors per sample with a low open-files limit.

With the default `file_descriptor` sharing strategy every shared tensor the main process keeps
holds a descriptor, so keeping batches (as metric or replay buffers do) runs into RLIMIT_NOFILE.
The same run passes with `--sharing-strategy file_system`.
"""

from __future__ import annotations

import argparse
import resource

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class ManySmall(Dataset[list[torch.Tensor]]):
    def __init__(self, tensors_per_sample: int) -> None:
        self.tensors_per_sample = tensors_per_sample

    def __len__(self) -> int:
        return 256

    def __getitem__(self, index: int) -> list[torch.Tensor]:
        return [torch.full((4,), float(index)) for _ in range(self.tensors_per_sample)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sharing-strategy", choices=["file_descriptor", "file_system"], required=True)
    parser.add_argument("--nofile", type=int, default=256, help="RLIMIT_NOFILE for this run")
    parser.add_argument("--tensors-per-sample", type=int, default=8)
    args = parser.parse_args()

    resource.setrlimit(resource.RLIMIT_NOFILE, (args.nofile, args.nofile))
    mp.set_sharing_strategy(args.sharing_strategy)  # type: ignore[no-untyped-call]  # untyped in torch
    strategy = mp.get_sharing_strategy()  # type: ignore[no-untyped-call]  # untyped in torch
    print(f"sharing_strategy={strategy} RLIMIT_NOFILE={args.nofile}", flush=True)

    loader = DataLoader(ManySmall(args.tensors_per_sample), batch_size=None, num_workers=2, prefetch_factor=2)
    kept: list[list[torch.Tensor]] = []
    for step, sample in enumerate(loader):
        kept.append(sample)  # e.g. a buffer of recent batches for metrics
        if step % 16 == 0:
            print(f"step {step} kept={len(kept)}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
