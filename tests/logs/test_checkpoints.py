"""Checkpoint saves, loads and completions, in the words each framework's source prints them (HF
transformers trainer.py, Lightning model_checkpoint.py and checkpoint_connector.py, DeepSpeed engine.py
and torch_checkpoint_engine.py, Megatron-LM checkpointing.py), with a near-miss for each."""

from __future__ import annotations

import pytest

from trainmedic.api import Diagnoser, Named
from trainmedic.model import Checkpoint


def _found(text: str) -> list[Checkpoint]:
    (scan,) = Diagnoser().scan(Named("train.log", text.encode()))
    return list(scan.checkpoints)


@pytest.mark.parametrize(("line", "kind", "path", "step"), [
    ("[INFO|trainer.py:4149] 2026-12-01 03:40:01,123 >> Saving model checkpoint to out/checkpoint-500",
     "save", "out/checkpoint-500", 500),
    ("[transformers] Loading model from out/checkpoint-500.", "load", "out/checkpoint-500", 500),
    ("Epoch 0, global step 100: 'val_loss' reached 0.50000 (best 0.50000), saving model to "
     "'/ckpt/epoch=0-step=100.ckpt' as top 1", "save", "/ckpt/epoch=0-step=100.ckpt", 100),
    ("Restoring states from the checkpoint path at /ckpt/last.ckpt", "load", "/ckpt/last.ckpt", None),
    ("[2026-12-01 03:40:02,000] [INFO] [engine.py:5350:_save_checkpoint] Saving model checkpoint: "
     "/ckpt/global_step500/mp_rank_00_model_states.pt", "save", "/ckpt/global_step500/mp_rank_00_model_states.pt", 500),
    ("[2026-12-01 03:40:03,000] [INFO] [torch_checkpoint_engine.py:30:commit] [Torch] Checkpoint global_step500 is "
     "ready now!", "done", "global_step500", 500),
    (" saving checkpoint at iteration     500 to /ckpt/megatron in torch_dist format", "save", "/ckpt/megatron", 500),
    ("  successfully saved checkpoint from iteration     500 to /ckpt/megatron", "done", "/ckpt/megatron", 500),
    ("  successfully loaded checkpoint from /ckpt/megatron [ t 0, p 0 ] at iteration 500", "load", "/ckpt/megatron",
     500),
    ("Saved checkpoint to ckpt/step_1200.pt", "save", "ckpt/step_1200.pt", 1200),
    ("[rank0]: checkpoint saved: runs/a/iter_0001200.pth", "save", "runs/a/iter_0001200.pth", 1200),
])
def test_each_frameworks_wording(line: str, kind: str, path: str, step: int | None) -> None:
    (found,) = _found("step 1 loss 0.5\n" + line + "\n")
    assert (found.kind, found.path, found.step) == (kind, path, step)
    assert found.line.number == 2
    assert (found.completed is True) == (kind == "done")


@pytest.mark.parametrize("line", [
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]",  # a model's weights, not a resume
    "Can't find a valid checkpoint at out/checkpoint-500",  # a failure to load, not a load
    "saving the config to out/config.json",
    "Checkpoint global_step500 is about to be saved!",
    "[rank7]:Checkpoint saved in 4.82s (2.1 GB)",  # a duration, not a place
])
def test_near_misses_are_no_checkpoint(line: str) -> None:
    assert _found(line + "\n") == []


def test_the_time_and_rank_of_the_line_come_with_it() -> None:
    (found,) = _found("[rank3]:[2026-12-01 03:40:01,123] Saved checkpoint to ckpt/step_7.pt\n")
    assert found.line.rank == 3 and found.line.time is not None and found.step == 7


@pytest.mark.parametrize("spacing", [
    [1] * 40,  # a run that saves every other line
    [1] * 1100,  # a flood, past SAVES_BOUND: the block's last windows (reader._last_saves) hold the last ones
    [1500] * 10 + [1] * 10 + [2500] * 20,  # sparse at the end: windows would have to grow back to the start
    [30_000, 1],  # two saves in a block of filler
])
@pytest.mark.parametrize("backend", ["hyperscan", "python"])
def test_a_blocks_last_saves_are_the_ones_read_however_they_are_spaced(spacing: list[int], backend: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Of one block's checkpoint lines the last CHECKPOINTS_PER_BLOCK are read, whether the scan
    reported each (up to SAVES_BOUND) or the block's end was searched for them (a flood, or the
    fallback scanner): the same ones, at the same line numbers, as a line by line reading finds."""
    from trainmedic.logs.blocks import BLOCK
    from trainmedic.logs.reader import CHECKPOINTS_PER_BLOCK, SAVES_WINDOW
    from trainmedic.scan.database import hyperscan_available

    if backend == "hyperscan" and not hyperscan_available():
        pytest.skip("hyperscan not installed on this platform")
    monkeypatch.setenv("TRAINMEDIC_SCANNER", backend)

    lines: list[str] = []
    saved: list[tuple[int, int]] = []  # (line number, step)
    for step, gap in enumerate(spacing, start=1):
        lines += [f"step {len(lines)} loss 0.5" for _ in range(gap)]
        lines.append(f"Saved checkpoint to ckpt/step_{step}.pt")
        saved.append((len(lines), step))
    found = _found("\n".join(lines) + "\n")
    text = "\n".join(lines)
    assert len(text) < BLOCK  # one block
    if spacing[-1] > 1:  # the last saves lie further back than the first windows reach
        assert text.find(f"step_{len(spacing) - CHECKPOINTS_PER_BLOCK + 1}.pt") < len(text) - 4 * SAVES_WINDOW
    assert [(c.line.number, c.step) for c in found] == saved[-CHECKPOINTS_PER_BLOCK:]
