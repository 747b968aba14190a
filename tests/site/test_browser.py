"""The site in a real browser: a headless Chromium screenshot kept as an artifact, and the offline search run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = ROOT / "scripts" / "install-chromium.sh"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


@pytest.fixture(scope="module")
def chromium() -> Path:
    """Debian's chromium; installed here when missing and possible (make installs it first)."""
    if not CHROMIUM.exists() and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["bash", str(INSTALL)], check=False, timeout=900, capture_output=True)
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing and could not be installed: run `sudo bash {INSTALL}`")
    return CHROMIUM


def run_chromium(browser: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(browser), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=90, check=False,
    )


@pytest.mark.parametrize("page", ["dataloader-worker-failure/index.html", "index.html"])
def test_page_screenshot_is_kept_as_an_artifact(chromium: Path, site: Path, tmp_path: Path, page: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = "index" if page == "index.html" else page.split("/", maxsplit=1)[0]
    png = SCREENSHOTS / f"{name}.png"
    png.unlink(missing_ok=True)
    done = run_chromium(chromium, tmp_path / "profile", f"--screenshot={png}", "--window-size=1280,1600",
                        (site / page).as_uri())
    assert png.is_file(), done.stderr[-2000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000, "a blank page compresses to a few KB: the page did not render"


def test_search_box_matches_a_pasted_log_line_offline(chromium: Path, site: Path, tmp_path: Path) -> None:
    line = "[rank3]: RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. "
    url = (site / "index.html").as_uri() + "?q=" + quote(line)
    done = run_chromium(chromium, tmp_path / "profile", "--dump-dom", url)
    dom = done.stdout
    assert 'id="results"' in dom, done.stderr[-2000:]
    results = dom.split('id="results"', 1)[1].split("</ol>", 1)[0]
    assert "dataloader-worker-failure/shm-exhausted" in results
    assert "your line matches fingerprint bus-error-killed" in results


# What people paste, and the cause that should come first for it.
PASTED = [
    ("Bus error", "dataloader-worker-failure/shm-exhausted"),
    ("Too many open files", "dataloader-worker-failure/fd-exhaustion"),
    ("received 0 items of ancdata", "dataloader-worker-failure/fd-exhaustion"),
    ("CUDA out of memory", "cuda-out-of-memory/allocator-oom"),
    # the same message from a DataLoader worker or a plain fork: in real logs the worker more often
    ("Cannot re-initialize CUDA in forked subprocess", "dataloader-worker-failure/cuda-in-forked-worker"),
    ("NCCL timeout", "nccl-timeout/watchdog-timeout"),
    ("Address already in use", "rendezvous-failure/port-in-use"),
    ("loss is nan", "nan-loss/nonfinite-loss"),
]


@pytest.mark.parametrize(("query", "first"), PASTED)
def test_search_puts_the_right_cause_first_for_what_people_paste(
        chromium: Path, site: Path, tmp_path: Path, query: str, first: str) -> None:
    url = (site / "index.html").as_uri() + "?q=" + quote(query)
    dom = run_chromium(chromium, tmp_path / "profile", "--dump-dom", url).stdout
    results = dom.split('id="results"', 1)[1].split("</ol>", 1)[0]
    top = results.split("</li>", 1)[0]
    assert first in top, top
