"""Two set-up mistakes that let training start and stop it at a predictable place.

--mode batch-of-one: a dataset of 9 samples in batches of 4 without drop_last, through a model with
  BatchNorm: the third batch holds one sample and BatchNorm refuses it in training mode.
--mode no-process-group: a script written for torchrun, run with plain python: it trains a few steps,
  then its end-of-epoch barrier needs the process group it never created.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["batch-of-one", "no-process-group"], required=True)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                                torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = TensorDataset(torch.randn(9, 8), torch.randn(9, 1))
    loader = DataLoader(data, batch_size=4, shuffle=False)  # 4 + 4 + 1
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            if args.mode == "no-process-group" and step == 1:
                dist.barrier()  # the ranks meet here; no group was ever created
    print("done", flush=True)


if __name__ == "__main__":
    main()
