"""The tail's forms of progress and of an end: a bar in YOLOv5's own format, a shell's prompt alone."""

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
