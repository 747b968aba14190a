"""The tail's forms of progress and of an end: bars in YOLOv5's and Ultralytics' own formats, a shell's prompt alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainmedic.api import Diagnoser
from trainmedic.catalog import load_library
from trainmedic.logs.reader import Reader
from trainmedic.logs.sources import Source
from trainmedic.model import ScanResult

# YOLOv5's training bar (utils/general.py: TQDM_BAR_FORMAT = "{l_bar}{bar:10}| {n_fmt}/{total_fmt} {elapsed}")
BAR = "      0/299      3.2G     0.1104    0.07212    0.03947        128        640:  12%|#1        | 48/402 00:20\n"


def _scan(tmp_path: Path, text: str) -> ScanResult:
    path = tmp_path / "x.log"
    path.write_text(text)
    base = Diagnoser(load_library()).reader
    return Reader(base.given, base.backend).scan(Source(str(path), path, path.stat().st_size))


def test_yolov5s_own_bar_format_is_progress(tmp_path: Path) -> None:
    s = _scan(tmp_path, BAR)
    p = next(iter(s.progress.values()))
    assert p.step == 48 and s.tqdm_incomplete[None]


# Ultralytics' own TQDM (ultralytics/utils/tqdm.py, which replaced tqdm in 8.3): "{desc}: {percent:.0f}% {bar}
# {n}/{total} {rate} {elapsed}{<remaining}", the bar twelve of ━ ─ ╸ (a YOLOv8s notebook's epoch line).
GLYPH_BAR = ("      1/100      7.49G      1.435      2.321      1.633         48        640: 52% ━━━━━━────── 33/64 "
             "1.3s/it 51.5s<40.1s\n")


def test_ultralytics_own_bar_is_progress(tmp_path: Path) -> None:
    s = _scan(tmp_path, GLYPH_BAR)
    p = next(iter(s.progress.values()))
    assert p.step == 33 and s.tqdm_incomplete[None]


def test_a_percentage_and_count_without_the_bar_glyphs_is_no_bar(tmp_path: Path) -> None:
    # near miss: the same words with an ASCII rule in place of the glyphs (a table's separator) show no step
    s = _scan(tmp_path, GLYPH_BAR.replace("━━━━━━──────", "------------"))
    assert all(p.step != 33 for p in s.progress.values())


@pytest.mark.parametrize("prompt", [
    "user@node1:~/yolov5$ ", "(base) user@node1:~/yolov5$", "[user@node1 yolov5]$", "root@node1:/workspace#",
    "PS C:\\Users\\user\\yolov5>", "(yolo) PS C:\\Users\\user\\yolov5> ", "C:\\Users\\user\\yolov5>",
])
def test_a_shells_prompt_alone_on_a_line_is_found(tmp_path: Path, prompt: str) -> None:
    assert _scan(tmp_path, BAR + prompt + "\n").prompt_line == 2


@pytest.mark.parametrize("line", [
    "user@node1:~/yolov5$ python train.py --img 640",  # a command typed at it: the session went on
    "PS C:\\Users\\user\\yolov5> python train.py",
    "Saved to C:\\Users\\user\\runs>",  # prose that ends like one
    "git@github.com: Permission denied (publickey).",
])
def test_a_prompt_with_a_command_or_prose_is_not_found(tmp_path: Path, line: str) -> None:
    assert _scan(tmp_path, BAR + line + "\n").prompt_line == 0


# MMCV's EpochBasedRunner (mmcv/runner/hooks/logger/text.py: "Epoch [{epoch}][{iter}/{len}]"), runners built
# like it with the epochs' total ("Epoch [1/70][10/2860]"), and MMEngine's "Epoch(train)  [3][ 200/1251]"
@pytest.mark.parametrize(("line", "epoch", "step"), [
    ("2025-06-13 11:29:05,788 - INFO - Epoch [1/70][10/2860]  lr: 0.0001, eta: 8 days, 17:29:34, data_time: 0.35\n",
     1, 10),
    ("2021-03-02 10:11:12,345 - mmdet - INFO - Epoch [12][1350/7330]\tlr: 2.000e-02, eta: 3:02:11, time: 0.512\n",
     12, 1350),
    ("2023/05/04 09:10:11 - mmengine - INFO - Epoch(train)  [3][ 200/1251]  lr: 1.0000e-03  eta: 1:02:03\n", 3, 200),
])
def test_mmcv_s_epoch_then_iteration_brackets_give_the_iteration_as_the_step(
        tmp_path: Path, line: str, epoch: int, step: int) -> None:
    p = next(iter(_scan(tmp_path, line).progress.values()))
    assert (p.epoch, p.step) == (epoch, step)


def test_mmcv_s_iteration_rises_within_an_epoch(tmp_path: Path) -> None:
    lines = "".join(f"2025-06-13 11:29:{n:02d},788 - INFO - Epoch [1/70][{n}0/2860]  lr: 0.0001\n" for n in (1, 2, 3))
    assert len(next(iter(_scan(tmp_path, lines).progress.values())).rises) == 2
    # near miss: an epoch bracket alone ("Iter [..]" runners, the summary line) is read as before
    p = next(iter(_scan(tmp_path, "2021-03-02 10:11:12 - mmseg - INFO - Iter [400/160000]\tlr: 9.977e-03\n")
                  .progress.values()))
    assert (p.epoch, p.step) == (None, 400)


@pytest.mark.parametrize(("line", "training"), [
    ("[val] epoch 10 | loss: 0.0783 | acc: 0.9523\n", False),
    # timm's validate(): "Test: [   0/196]  Time: 1.234 (1.234)  Loss:  0.8130 (0.8130)  Acc@1:  82.0312"
    ("Test: [   0/196]  Time: 1.234 (1.234)  Loss:  0.8130 (0.8130)  Acc@1:  82.0312 ( 82.0312)\n", False),
    ("2023/05/04 09:10:11 - mmengine - INFO - Epoch(val)  [1][100/500]    eta: 0:01:02  loss: 0.4410\n", False),
    ("[train-step] epoch 1 (progress=0.1316) | loss: 0.9194 | lr: 0.000050\n", True),
    # near misses: a training record that names the validation set's size, a run called "test-run"
    ("Epoch 3: train loss 0.5123, 5000 val samples\n", True),
    ("test-run: step 40 loss: 0.5123\n", True),
])
def test_a_loss_after_an_evaluation_s_tag_is_not_the_training_loss(tmp_path: Path, line: str, training: bool) -> None:
    p = next(iter(_scan(tmp_path, line).progress.values()))
    assert (p.loss_last is not None) == training
