"""A dataset whose __getitem__ raises on one sample (a label missing from the label map).

With workers the main process re-raises it as "Caught KeyError in DataLoader worker process N";
with --workers 0 the plain traceback shows the dataset frame directly.
"""

from __future__ import annotations

import argparse

import torch
from torch.utils.data import DataLoader, Dataset

LABELS = {"cat": 0, "dog": 1, "bird": 2}


class Labelled(Dataset[tuple[torch.Tensor, int]]):
    def __init__(self, bad_index: int) -> None:
        names = ["cat", "dog", "bird"]
        self.samples = [names[i % 3] for i in range(64)]
        self.samples[bad_index] = "dgo"  # a typo in one annotation file

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        label = LABELS[self.samples[index]]
        return torch.full((4,), float(index)), label


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bad-index", type=int, default=13)
    args = parser.parse_args()

    loader = DataLoader(Labelled(args.bad_index), batch_size=4, num_workers=args.workers)
    for step, (x, y) in enumerate(loader):
        print(f"step {step} x_sum={x.sum().item():.0f} labels={y.tolist()}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
