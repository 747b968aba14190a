"""Lightning on the CPU (`strategy="ddp"`, gloo, N processes it starts itself), where one rank fails:
  --failure raise        the failing rank's training_step raises (a batch of the wrong width);
  --failure worker-kill  the failing rank's DataLoader worker is SIGKILLed;
  --failure hang         the failing rank stops (sleeps) and the others wait in a collective until the timeout;
  --failure callback     a user callback raises on the failing rank at the end of a batch;
  --failure none         a healthy run.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import lightning as L
import torch
from lightning.pytorch.strategies import DDPStrategy
from regression import Regression, failure_parser, group_timeout  # type: ignore[import-not-found]  # beside this script
from torch.utils.data import DataLoader


class Model(L.LightningModule):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.layer = torch.nn.Linear(8, 1)

    def failing(self, what: str) -> bool:
        return bool(self.args.failure == what and self.global_rank == self.args.fail_rank)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        if batch_idx == self.args.fail_step and self.failing("raise"):
            x = torch.cat([x, x], dim=1)  # a feature pipeline that doubled the width on one rank
        if batch_idx == self.args.fail_step and self.failing("hang"):
            while True:  # stuck: a deadlock, an endless retry, a blocking read
                time.sleep(1)
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, sync_dist=True, prog_bar=True)
        return loss

    def train_dataloader(self) -> DataLoader[tuple[torch.Tensor, torch.Tensor]]:
        kill_at = self.args.fail_step * 4 + 1 if self.failing("worker-kill") else None
        return DataLoader(Regression(kill_at), batch_size=4, num_workers=1)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.05)


class ExportMetrics(L.Callback):
    """A team's own callback that writes metrics to a store; on the failing rank the store is gone."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        if (self.args.failure == "callback" and trainer.global_rank == self.args.fail_rank
                and batch_idx == self.args.fail_step):
            raise ConnectionRefusedError(f"metrics store at 127.0.0.1:9 refused batch {batch_idx}")


def main() -> None:
    parser = failure_parser(__doc__, ["raise", "worker-kill", "hang", "callback"])
    parser.add_argument("--devices", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices, strategy=DDPStrategy(timeout=group_timeout(args)),
        max_steps=args.steps, enable_checkpointing=False, logger=False, enable_model_summary=False,
        callbacks=[ExportMetrics(args)], enable_progress_bar=False,
    )
    trainer.fit(Model(args))


if __name__ == "__main__":
    main()
