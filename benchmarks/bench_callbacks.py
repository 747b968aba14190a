#!/usr/bin/env python3
"""What the guard's callbacks cost a healthy run: steps per second with and without them.

Each repetition trains a small model on the CPU for `--steps` steps, through Lightning (LightningGuard)
or HF Trainer (HFTrainerGuard), in a fresh process, with two persistent DataLoader workers; runs with
and without the callback alternate so both see the same machine load. Prints the median steps/s of
each and their ratio, and writes benchmarks/out/callbacks.json. Nothing asserts on the figures.

    python benchmarks/bench_callbacks.py                      # both frameworks, 400 steps, 5 reps
    python benchmarks/bench_callbacks.py --framework hf --steps 200 --reps 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"

# One training run in a child process; prints the steps/s of the steps after the first 20 (start-up,
# worker spawn and first-batch costs are the same with or without the guard and would blur the ratio).
CHILD = r'''
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
framework, steps, guarded = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
WARM = 20

class Numbers(Dataset):
    def __len__(self): return 1 << 20
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"x": torch.randn(32, generator=g), "labels": torch.randn(1, generator=g)}

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    def forward(self, x, labels):
        return {"loss": torch.nn.functional.mse_loss(self.body(x), labels)}

marks = []
torch.manual_seed(0)
torch.set_num_threads(1)
if framework == "lightning":
    import lightning as L
    from trainmedic.torch.callbacks import LightningGuard
    class Module(L.LightningModule):
        def __init__(self):
            super().__init__(); self.net = Net()
        def training_step(self, batch, i):
            marks.append(time.perf_counter()); return self.net(**batch)["loss"]
        def train_dataloader(self):
            return DataLoader(Numbers(), batch_size=16, num_workers=2, persistent_workers=True)
        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)
    callbacks = [LightningGuard()] if guarded else []
    L.Trainer(accelerator="cpu", devices=1, max_steps=steps, callbacks=callbacks, enable_checkpointing=False,
              logger=False, enable_progress_bar=False, enable_model_summary=False).fit(Module())
else:
    from transformers import Trainer, TrainerCallback, TrainingArguments
    from trainmedic.torch.callbacks import HFTrainerGuard
    class Marks(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw): marks.append(time.perf_counter())
    import tempfile
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=16, max_steps=steps,
                             logging_steps=10**9, save_strategy="no", dataloader_num_workers=2,
                             dataloader_persistent_workers=True, report_to=[], use_cpu=True, disable_tqdm=True)
    callbacks = [Marks()] + ([HFTrainerGuard()] if guarded else [])
    Trainer(model=Net(), args=args, train_dataset=Numbers(), callbacks=callbacks).train()
print((len(marks) - 1 - WARM) / (marks[-1] - marks[WARM]))
'''


def run(framework: str, steps: int, guarded: bool) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-c", CHILD, framework, str(steps), "1" if guarded else "0"],
                             capture_output=True, text=True, env={**env, "TMPDIR": tmp}, cwd=tmp, timeout=600,
                             check=True)
    return float(out.stdout.strip().splitlines()[-1])


def hook_cost(framework: str, batches: int = 20000) -> float:
    """Microseconds the callback's per-batch hooks take (its monitor thread runs apart, twice a second):
    a figure the machine's noise does not drown, unlike whole-run steps/s on a shared 2-core machine."""
    import io
    from types import SimpleNamespace

    from trainmedic.torch.callbacks import HFTrainerGuard, LightningGuard

    loader = SimpleNamespace(num_workers=2, persistent_workers=True)
    if framework == "lightning":
        cb = LightningGuard(stream=io.StringIO())
        trainer = SimpleNamespace(current_epoch=0, train_dataloader=loader)
        cb.setup(trainer, None, "fit")
        cb.on_train_epoch_start(trainer, None)
        start = time.perf_counter()
        for i in range(batches):
            cb.on_train_batch_start(trainer, None, None, i)
            cb.on_train_batch_end(trainer, None, None, None, i)
        took = time.perf_counter() - start
        cb.teardown(trainer, None, "fit")
    else:
        cb = HFTrainerGuard(stream=io.StringIO())
        targs = SimpleNamespace(dataloader_num_workers=2, dataloader_persistent_workers=True)
        state, control = SimpleNamespace(epoch=0.0), SimpleNamespace()
        cb.on_train_begin(targs, state, control)
        cb.on_epoch_begin(targs, state, control, train_dataloader=loader)
        start = time.perf_counter()
        for _ in range(batches):
            cb.on_step_begin(targs, state, control)
            cb.on_step_end(targs, state, control)
        took = time.perf_counter() - start
        cb.on_train_end(targs, state, control)
    return took / batches * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", choices=["lightning", "hf", "both"], default="both")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    frameworks = ["lightning", "hf"] if args.framework == "both" else [args.framework]
    results: dict[str, dict[str, object]] = {}
    print(f"{'framework':10} {'plain steps/s':>14} {'guarded steps/s':>16} {'guarded/plain':>14} "
          f"{'hooks us/batch':>15} {'share of a step':>16}")
    for framework in frameworks:
        plain: list[float] = []
        guarded: list[float] = []
        for _ in range(args.reps):
            plain.append(run(framework, args.steps, False))
            guarded.append(run(framework, args.steps, True))
        p, g = statistics.median(plain), statistics.median(guarded)
        hooks = hook_cost(framework)
        share = hooks * 1e-6 * p  # of the plain run's median step time
        results[framework] = {"plain_steps_per_s": plain, "guarded_steps_per_s": guarded,
                              "median_plain": p, "median_guarded": g, "ratio": g / p,
                              "hook_us_per_batch": hooks, "hook_share_of_step": share}
        print(f"{framework:10} {p:14.1f} {g:16.1f} {g / p:14.3f} {hooks:15.2f} {100 * share:15.3f}%")
    args.out.mkdir(parents=True, exist_ok=True)
    report = {"schema": "trainmedic.bench-callbacks/v1", "steps": args.steps, "reps": args.reps,
              "cpus": os.cpu_count(), "results": results}
    (args.out / "callbacks.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out / 'callbacks.json'}")


if __name__ == "__main__":
    main()
