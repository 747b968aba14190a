"""Accelerate on the CPU (`accelerate launch --multi_gpu --num_processes N`, gloo), where one rank fails:
  --failure raise        the failing rank raises (a batch of the wrong width reaches the model);
  --failure worker-kill  the failing rank's DataLoader worker is SIGKILLed;
  --failure hang         the failing rank stops (sleeps) and the others wait in a collective until the timeout;
  --failure none         a healthy run.
"""

from __future__ import annotations

import time

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs
from regression import Regression, failure_parser, group_timeout  # type: ignore[import-not-found]  # beside this script
from torch.utils.data import DataLoader


def main() -> None:
    args = failure_parser(__doc__, ["raise", "worker-kill", "hang"]).parse_args()
    accelerator = Accelerator(
        cpu=True, kwargs_handlers=[InitProcessGroupKwargs(timeout=group_timeout(args))]
    )
    rank = accelerator.process_index
    failing = rank == args.fail_rank and args.failure != "none"
    kill_at = args.fail_step * 4 + 1 if failing and args.failure == "worker-kill" else None
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Regression(kill_at), batch_size=4, num_workers=1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (batch_x, y) in enumerate(loader):
        if step == args.steps:
            break
        x = batch_x
        if failing and step == args.fail_step and args.failure == "raise":
            x = torch.cat([x, x], dim=1)  # a feature pipeline that doubled the width on one rank
        if failing and step == args.fail_step and args.failure == "hang":
            while True:  # stuck: a deadlock, an endless retry, a blocking read
                time.sleep(1)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        accelerator.backward(loss)
        optimizer.step()
        mean = accelerator.reduce(loss.detach(), reduction="mean")
        accelerator.print(f"step {step} loss {mean.item():.4f}")
    accelerator.end_training()


if __name__ == "__main__":
    main()
