"""DeepSpeed on the CPU (its own launcher, `DS_ACCELERATOR=cpu`, gloo, ZeRO stage 2), where something fails:
  --failure worker-kill  the failing rank's DataLoader worker is SIGKILLed;
  --failure hang         the failing rank stops (sleeps) and the others wait in a collective until the timeout;
  --failure batch-config the config's train_batch_size disagrees with micro batch x world size (every rank);
  --failure none         a healthy run.
"""

from __future__ import annotations

import os
import time

import deepspeed
import torch
from regression import Regression, failure_parser, group_timeout  # type: ignore[import-not-found]  # beside this script
from torch.utils.data import DataLoader


def main() -> None:
    parser = failure_parser(__doc__, ["worker-kill", "hang", "batch-config"])
    parser.add_argument("--local_rank", type=int, default=-1)  # the launcher passes it
    args = parser.parse_args()
    deepspeed.init_distributed(dist_backend="gloo", timeout=group_timeout(args))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    failing = rank == args.fail_rank and args.failure in ("worker-kill", "hang")
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    config = {
        "train_batch_size": 4 * world + (1 if args.failure == "batch-config" else 0),
        "train_micro_batch_size_per_gpu": 4,
        "optimizer": {"type": "Adam", "params": {"lr": 0.01, "torch_adam": True}},
        "zero_optimization": {"stage": 2},
    }
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=config)
    kill_at = args.fail_step * 4 + 1 if failing and args.failure == "worker-kill" else None
    loader = DataLoader(Regression(kill_at), batch_size=4, num_workers=1)
    for step, (x, y) in enumerate(loader):
        if step == args.steps:
            break
        if failing and step == args.fail_step and args.failure == "hang":
            while True:  # stuck: a deadlock, an endless retry, a blocking read
                time.sleep(1)
        loss = torch.nn.functional.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
