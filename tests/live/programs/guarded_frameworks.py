"""Real training through Lightning or HF Trainer with trainmedic's guard callback, on the CPU.

  --framework lightning|hf   which trainer runs, with LightningGuard / HFTrainerGuard in its callbacks;
  --failure none|worker-kill a DataLoader worker is SIGKILLed in epoch 1 (after the slow first batch);
  --epochs N                 two epochs by default: epoch 1's first batch waits for new workers.

A worker's first read takes 0.3 s (it opens its shards), so without persistent workers the first
batch of epoch 1 is slow and the guard says so; its lines go to stderr with the trainer's own output.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from trainmedic.torch.callbacks import HFTrainerGuard, LightningGuard

KILL_EPOCH = 1
_OPENED: list[bool] = []  # per process: a worker's first read is slow


class Numbers(Dataset[dict[str, torch.Tensor]]):
    def __init__(self, kill: bool) -> None:
        self.kill = kill

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        info = get_worker_info()
        if info is not None and not _OPENED:
            _OPENED.append(True)
            time.sleep(0.3)  # this worker opens its shards
        epoch = int(os.environ.get("GUARDED_EPOCH", "0"))
        if self.kill and info is not None and info.id == 0 and epoch == KILL_EPOCH and index >= 8:
            time.sleep(0.5)  # the guard's monitor sees the worker alive first, then dead
            os.kill(os.getpid(), signal.SIGKILL)
        gen = torch.Generator().manual_seed(index)
        return {"x": torch.randn(8, generator=gen), "labels": torch.randn(1, generator=gen)}


class Regressor(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"loss": torch.nn.functional.mse_loss(self.layer(x), labels)}


def lightning(args: argparse.Namespace, guard: Any) -> None:
    import lightning as L

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = Regressor()

        def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
            return self.net(**batch)["loss"]

        def on_train_epoch_start(self) -> None:
            os.environ["GUARDED_EPOCH"] = str(self.current_epoch)  # workers start after this hook

        def train_dataloader(self) -> DataLoader[dict[str, torch.Tensor]]:
            return DataLoader(Numbers(args.failure == "worker-kill"), batch_size=4, num_workers=2)

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=0.05)

    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=args.epochs, callbacks=[guard],
                        enable_checkpointing=False, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Module())


def hf(args: argparse.Namespace, guard: Any) -> None:
    from transformers import Trainer, TrainerCallback, TrainingArguments

    class Epochs(TrainerCallback):  # type: ignore[misc]  # transformers is untyped here
        def on_epoch_begin(self, targs: Any, state: Any, control: Any, **kwargs: Any) -> None:
            os.environ["GUARDED_EPOCH"] = str(int(state.epoch or 0))

    targs = TrainingArguments(output_dir=str(Path(os.environ.get("TMPDIR", "/tmp")) / "hf-out"),
                              per_device_train_batch_size=4, num_train_epochs=args.epochs, logging_steps=4,
                              save_strategy="no", dataloader_num_workers=2, report_to=[], use_cpu=True,
                              disable_tqdm=True, seed=0)
    trainer = Trainer(model=Regressor(), args=targs, train_dataset=Numbers(args.failure == "worker-kill"),
                      callbacks=[Epochs(), guard])
    trainer.train()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--framework", choices=["lightning", "hf"], required=True)
    parser.add_argument("--failure", choices=["none", "worker-kill"], default="none")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    guard_class = LightningGuard if args.framework == "lightning" else HFTrainerGuard
    guard = guard_class(slow_first_batch=0.25, interval=0.05)
    (lightning if args.framework == "lightning" else hf)(args, guard)
    print(f"guarded {args.framework} run done: {guard.stats.batches} batches", flush=True)


if __name__ == "__main__":
    main()
