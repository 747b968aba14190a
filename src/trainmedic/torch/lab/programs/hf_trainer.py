"""HF Trainer on the CPU with a tiny GPT-2 built from a config (nothing downloaded), where one thing fails:
  --failure worker-kill      a DataLoader worker (dataloader_num_workers=2) is SIGKILLed, as the OOM killer does;
  --failure getitem          the dataset raises in __getitem__ (a record with a missing field);
  --failure nan              the learning rate is far too high and clipping is off: the loss becomes NaN;
  --failure save-full        checkpoints every 2 steps go to a small filesystem (the runner mounts it): the
                             first fits, the second fails;
  --failure nan-after-save   a checkpoint every step, and a learning rate that turns the weights NaN after the
                             first: the checkpoints saved after that are NaN too;
  --failure resume-mismatch  training resumes from a checkpoint written by a model of another width;
  --failure model-not-found  the script loads a pretrained model by a Hub id this machine has not cached,
                             with no network (the runner sets HF_HUB_OFFLINE), as on a compute node;
  --failure none             a healthy run.
Launched as a plain script (one process) or under torchrun (--fail-rank picks the failing rank).
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset, get_worker_info
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

VOCAB, LENGTH = 64, 16


class Tokens(Dataset[dict[str, torch.Tensor]]):
    """Deterministic token windows. Worker 0's `fail_at`-th read goes wrong (the sampler shuffles, so
    the failure is tied to a count of reads, not to an index); `how` says how."""

    def __init__(self, fail_at: int | None, how: str) -> None:
        self.fail_at, self.how, self.reads = fail_at, how, 0

    def __len__(self) -> int:
        return 256

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        worker = get_worker_info()
        self.reads += 1
        if worker is not None and worker.id == 0 and self.reads == self.fail_at:
            if self.how == "worker-kill":
                time.sleep(0.5)  # the main process takes this worker's earlier batches first
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "getitem":
                record: dict[str, Any] = {"text": "a record whose tokens were never written"}
                return record["input_ids"]  # type: ignore[no-any-return]  # the KeyError is the point
        ids = torch.randint(0, VOCAB, (LENGTH,), generator=torch.Generator().manual_seed(index))
        return {"input_ids": ids, "labels": ids.clone()}


def model(width: int) -> GPT2LMHeadModel:
    config = GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=width, n_layer=1, n_head=2)
    torch.manual_seed(0)
    return GPT2LMHeadModel(config)


def arguments(out: str, args: argparse.Namespace, **overrides: Any) -> TrainingArguments:
    settings: dict[str, Any] = {
        "output_dir": out,
        "per_device_train_batch_size": 4,
        "max_steps": args.steps,
        "logging_steps": 1,
        "save_strategy": "no",
        "dataloader_num_workers": 2,
        "report_to": [],
        "use_cpu": True,
        "disable_tqdm": True,
        "seed": 0,
    }
    settings.update(overrides)
    return TrainingArguments(**settings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--failure", default="none",
                        choices=["none", "worker-kill", "getitem", "nan", "save-full", "nan-after-save",
                                 "resume-mismatch", "model-not-found"])
    parser.add_argument("--fail-rank", type=int, default=0)
    parser.add_argument("--fail-step", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    rank = int(os.environ.get("RANK", "0"))
    failing = rank == args.fail_rank and args.failure != "none"
    work = Path(os.environ.get("TMPDIR", "/tmp"))
    fail_at = args.fail_step * 4 + 1 if failing and args.failure in ("worker-kill", "getitem") else None
    data = Tokens(fail_at, args.failure)
    out = str(work / "out")
    extra: dict[str, Any] = {}
    if failing and args.failure == "nan":
        extra = {"learning_rate": 1e6, "max_grad_norm": 0.0, "optim": "sgd"}
    if args.failure == "save-full":
        # the runner mounts a small tmpfs here: one checkpoint fits, two do not. log_level "info", as the
        # HF examples set it, prints each save.
        out = str(work / "small")
        extra = {"save_strategy": "steps", "save_steps": 2, "log_level": "info"}
    if args.failure == "nan-after-save":
        extra = {"learning_rate": 1e6, "max_grad_norm": 0.0, "optim": "sgd", "save_strategy": "steps",
                 "save_steps": 1, "log_level": "info"}
    if args.failure == "model-not-found":
        print("loading acme/gpt2-tiny-sft", flush=True)
        GPT2LMHeadModel.from_pretrained("acme/gpt2-tiny-sft")
        return
    if args.failure == "resume-mismatch":
        first = Trainer(model=model(32), args=arguments(out, args, max_steps=2, save_strategy="steps",
                                                          save_steps=2), train_dataset=data)
        first.train()
        checkpoint = str(Path(out) / "checkpoint-2")
        print("resuming with a wider model from", checkpoint, flush=True)
        again = Trainer(model=model(48), args=arguments(out, args), train_dataset=data)
        again.train(resume_from_checkpoint=checkpoint)
        return
    trainer = Trainer(model=model(32), args=arguments(out, args, **extra), train_dataset=data)
    trainer.train()


if __name__ == "__main__":
    main()
