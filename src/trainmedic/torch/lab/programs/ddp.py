"""Data-parallel training on gloo where one rank (chosen by flag) fails, for torchrun.

Every step does DDP's gradient all_reduce plus an all_reduce of the loss, so when one rank stops
the others are left waiting in a collective, as on a real cluster:
  --failure worker-kill  the failing rank's DataLoader worker is SIGKILLed;
  --failure raise        the failing rank raises (reloads a checkpoint of the wrong shape);
  --failure hang         the failing rank stops (sleeps) and the others hit the gloo timeout;
  --failure lease        the failing rank gives up with an exception of the job's own, in words no
                         library knows (a lost lease on a parameter shard): a failure new to trainmedic.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class LeaseExpired(Exception):
    """The job's own exception: nothing in trainmedic's library knows its name or its words."""


class Regression(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, kill_at_index: int | None) -> None:
        self.kill_at_index = kill_at_index

    def __len__(self) -> int:
        return 1024

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if index == self.kill_at_index:
            time.sleep(1.0)  # let the main process take this worker's earlier batches first
            os.kill(os.getpid(), signal.SIGKILL)
        gen = torch.Generator().manual_seed(index)
        return torch.randn(8, generator=gen), torch.randn(1, generator=gen)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fail-rank", type=int, default=2)
    parser.add_argument("--failure", choices=["worker-kill", "raise", "hang", "lease", "none"], default="none")
    parser.add_argument("--fail-step", type=int, default=4)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=20.0, help="process-group timeout, seconds")
    parser.add_argument("--record", action="store_true", help="wrap main in torchelastic's @record")
    return parser.parse_args()


def train(args: argparse.Namespace) -> None:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    failing = rank == args.fail_rank and args.failure != "none"
    kill_at = args.fail_step * args.batch_size if failing and args.failure == "worker-kill" else None

    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Regression(kill_at), batch_size=args.batch_size, num_workers=1)
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        if failing and step == args.fail_step and args.failure == "raise":
            model.module.load_state_dict({"weight": torch.zeros(4, 8), "bias": torch.zeros(4)})
        if failing and step == args.fail_step and args.failure == "lease":
            print(f"rank {rank} step {step}: shard {rank + 2} lost its lease on the parameter store", flush=True)
            raise LeaseExpired(f"shard {rank + 2} has had no owner for 3 heartbeats")
        if failing and step == args.fail_step and args.failure == "hang":
            while True:  # stuck: a deadlock, an endless retry, a blocking read
                time.sleep(1)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        print(f"rank {rank} step {step} loss {total.item() / world:.4f}", flush=True)
    dist.destroy_process_group()


def main() -> None:
    args = parse()
    if args.record:
        record(train)(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
