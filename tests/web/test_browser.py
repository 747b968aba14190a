"""End to end in headless Chromium against a real `trainmedic serve`: what a newcomer does.

Screenshots of every page are kept under artifacts/screenshots/web-*.png.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.web.conftest import SCREENSHOTS, Served, match_line

pytestmark = pytest.mark.xdist_group("web-browser")

LAB = FIXTURES / "lab"
TIMEOUT = 30_000


def lab_case(case: str) -> list[tuple[str, bytes]]:
    if not (LAB / "manifest.json").exists():
        pytest.skip("the lab captures are not in this checkout")
    manifest = {c["case"]: c for c in json.loads((LAB / "manifest.json").read_text())}
    return [(rel.split("/", 1)[1], (LAB / rel).read_bytes()) for rel in manifest[case]["files"]]


def diagnose_in_page(page: Any) -> dict[str, Any]:
    """Press Diagnose once the files are read; return the JSON the page sent."""
    page.wait_for_selector("#diagnose:not([disabled])", timeout=120_000)
    with page.expect_request(lambda r: r.url.endswith("/api/diagnose") and r.method == "POST") as req:
        page.click("#diagnose")
    page.wait_for_url("**/d/*", timeout=TIMEOUT)
    page.wait_for_selector("#headline")
    sent: dict[str, Any] = json.loads(req.value.post_data)
    return sent


def test_paste_a_log_and_read_the_answer(page: Any, served: Served) -> None:
    text = dict(lab_case("ddp-rank-raises"))["output.log"].decode()
    page.goto(served.url + "/")
    page.fill("#paste", text)
    sent = diagnose_in_page(page)
    assert sent["files"][0]["name"] == "pasted.log"
    assert sent["files"][0]["text"].splitlines() == text.splitlines()  # small: sent whole
    assert page.inner_text("#headline") == "Rank 1 failed first"
    assert "checkpoint-load-mismatch/state-dict-mismatch" in page.inner_text(".verdict")
    # evidence quoted in context, with its line number
    hit = page.locator(".context li.hit").first
    assert "Error(s) in loading state_dict" in hit.inner_text()
    # the timeline is drawn by the server: one lane per rank, the finding ringed on rank 1
    svg = page.locator(".timeline-wrap svg")
    assert svg.get_attribute("data-mode") == "line"
    labels = svg.locator(".lane-label").all_text_contents()
    assert labels[:4] == ["rank 0", "rank 1 · failed first", "rank 2", "rank 3"]
    assert svg.locator(".mark-primary").count() == 1
    box = svg.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 150
    # copy as markdown puts the CLI's markdown report on the clipboard
    page.click(".toolbar button[data-copy='report-md']")
    clip = page.evaluate("() => navigator.clipboard.readText()")
    assert clip.startswith("## trainmedic: The run failed")
    assert "`checkpoint-load-mismatch/state-dict-mismatch`" in clip
    page.click("button[data-copy='verify-1']")
    assert page.evaluate("() => navigator.clipboard.readText()") == page.inner_text("#verify-1")
    # the encyclopedia link works
    page.click(".verdict a[href^='/library/']")
    page.wait_for_load_state()
    assert "/library/checkpoint-load-mismatch/" in page.url
    assert not page.problems, page.problems


def test_upload_a_multi_rank_job(page: Any, served: Served, tmp_path: Path) -> None:
    """Per-rank files (one gzipped) as a user would pick them: rank 2 went first."""
    files = dict(lab_case("ddp-worker-crash-logdir"))
    picked = []
    for name, data in files.items():
        if name == "output.log":
            target = tmp_path / "launcher.log"
            target.write_bytes(data)
        elif name.endswith("stderr.log"):
            rank = name.split("/")[-2]
            target = tmp_path / (f"rank{rank}.log.gz" if rank == "2" else f"rank{rank}.log")
            target.write_bytes(gzip.compress(data) if rank == "2" else data)
        else:
            continue
        picked.append(str(target))
    page.goto(served.url + "/")
    page.set_input_files("#file-input", picked)
    sent = diagnose_in_page(page)
    names = sorted(f["name"] for f in sent["files"])
    assert "rank2.log.gz" in names and "launcher.log" in names
    # the browser decompressed the gzip file itself, so it could redact it: text went out, not bytes
    gz = next(f for f in sent["files"] if f["name"] == "rank2.log.gz")
    assert "text" in gz and "is killed by signal: Killed" in gz["text"]
    assert page.inner_text("#headline") == "Rank 2 failed first"
    assert "dataloader-worker-failure/worker-oom" in page.inner_text(".verdict")
    collateral = page.inner_text("section[aria-labelledby=collateral-title]")
    assert "rank 1" in collateral and "rank 3" in collateral
    svg = page.locator(".timeline-wrap svg")
    assert svg.get_attribute("data-mode") == "phase"  # separate files, no clocks
    assert "rank 2 · failed first" in svg.locator(".lane-label").all_text_contents()
    assert svg.locator(".mark-cascade").count() >= 2
    assert not page.problems, page.problems


def test_a_script_in_a_log_does_not_run(page: Any, served: Served, library: Any) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    evil = ("<script>window.__pwned = 1; alert('script')</script>"
            "<img src=x onerror=\"window.__pwned = 2; alert('img')\">")
    line = match_line(library, "dataloader-worker-failure/shm-exhausted")
    page.goto(served.url + "/")
    page.fill("#paste", f"{evil}\n[rank0]: {line} {evil}\n")
    page.wait_for_selector("#diagnose:not([disabled])", timeout=TIMEOUT)
    page.click("details.sent summary")  # the preview shows the text as text
    page.wait_for_selector("pre.sent-text:has-text('window.__pwned')", timeout=TIMEOUT)
    assert "<script>window.__pwned" in page.inner_text("pre.sent-text")
    assert page.evaluate("() => window.__pwned") is None
    page.click("#diagnose")
    page.wait_for_url("**/d/*", timeout=TIMEOUT)
    page.wait_for_selector("#headline")
    assert "<script>window.__pwned" in page.inner_text(".context")  # shown, as text
    assert page.evaluate("() => window.__pwned") is None
    page.goto(served.url + "/history")
    assert page.evaluate("() => window.__pwned") is None
    assert dialogs == []


def test_secrets_are_redacted_before_sending(page: Any, served: Served, library: Any) -> None:
    line = match_line(library, "cuda-out-of-memory/allocator-oom")
    log = "\n".join([
        "[rank0]: HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345 GITHUB ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "[rank0]: aws AKIAIOSFODNN7EXAMPLE header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def",
        "[rank0]: db postgresql://trainer:hunter2@db.internal:5432/runs mail alice@example.com",
        "[rank0]: connecting to node-7.cluster.local (10.1.2.3) and 10.1.2.4, WANDB_API_KEY=0123456789abcdef",
        f"[rank0]: {line}",
    ]) + "\n"
    page.goto(served.url + "/")
    page.check("#redact-hosts")
    page.fill("#paste", log)
    sent = diagnose_in_page(page)
    text = sent["files"][0]["text"]
    for secret in ("hf_AbCd", "ghp_0123", "AKIAIOSFODNN7EXAMPLE", "eyJhbGci", "hunter2", "alice@example.com",
                   "node-7.cluster.local", "10.1.2.3", "10.1.2.4", "0123456789abcdef"):
        assert secret not in text, secret
    assert "postgresql://trainer:<redacted>@" in text
    assert "HF_TOKEN=hf_<redacted>" in text and "WANDB_API_KEY=<redacted>" in text
    assert "192.0.2.1" in text and "192.0.2.2" in text  # distinct addresses stay distinct
    assert "cuda-out-of-memory" in page.inner_text(".verdict")  # the evidence survives redaction
    assert not page.problems, page.problems


def test_a_sample_diagnoses_in_one_click(page: Any, served: Served) -> None:
    page.goto(served.url + "/")
    page.click("summary:has-text('each encyclopedia entry')")
    page.click("button[data-sample='entry-cuda-out-of-memory']")
    diagnose_in_page(page)
    assert "cuda-out-of-memory/" in page.inner_text(".verdict")
    page.goto(served.url + "/history")
    assert page.locator("table tbody tr").count() >= 1
    assert not page.problems, page.problems


def _big_log(path: Path, size: int, library: Any) -> int:
    """~`size` bytes of 4-rank training progress; rank 2 hits a CUDA OOM at 60%, the others later time out.
    Returns the line number of the OOM line."""
    oom = match_line(library, "cuda-out-of-memory/allocator-oom")
    timeout = match_line(library, "nccl-timeout/watchdog-timeout")
    block = "".join(
        f"[rank{r}]: 2026-12-01 09:{s // 60 % 60:02d}:{s % 60:02d},{s % 1000:03d} INFO step {s} "
        f"loss {1.0 / (1 + s % 97):.4f} lr 1.0e-04 tokens/s {31000 + s % 500}\n"
        for s in range(2000) for r in range(4))
    tail = "".join(ln + "\n" for ln in block.splitlines() if not ln.startswith("[rank2]")).replace(
        " 09:", " 11:")
    lines = 0
    written = 0
    with path.open("w", encoding="utf-8") as f:
        while written + len(block) < size * 0.6:
            f.write(block)
            written += len(block)
            lines += block.count("\n")
        section = [
            "[rank2]: 2026-12-01 11:00:00,000 INFO step 9000 loss 0.2 lr 1.0e-04 tokens/s 31000",
            "[rank2]: 2026-12-01 11:00:01,000 INFO pushing with token hf_abcdefghijklmnopqrstuvwxyz0123",
            "[rank2]: Traceback (most recent call last):",
            '[rank2]:   File "/home/alice/train.py", line 88, in <module>',
            "[rank2]:     loss.backward()",
            f"[rank2]: {oom}",
        ]
        f.write("\n".join(section) + "\n")
        lines += len(section)
        oom_line = lines
        while written + len(tail) < size:
            f.write(tail)
            written += len(tail)
        f.write("".join(f"[rank{r}]: 2026-12-01 11:40:00,000 ERROR {timeout}\n" for r in (0, 1, 3)))
    return oom_line


@pytest.mark.slow
def test_a_large_file_is_reduced_in_the_browser(page: Any, served: Served, library: Any, tmp_path: Path) -> None:
    if shutil.disk_usage(tmp_path).free < 1 << 30:
        pytest.skip("needs 1 GiB free in the temp dir")
    big = tmp_path / "train.log"
    oom_line = _big_log(big, 200 << 20, library)
    size = big.stat().st_size
    page.goto(served.url + "/")
    page.set_input_files("#file-input", str(big))
    # the page stays responsive while the worker reads 200 MB: a timer still fires promptly
    page.wait_for_selector(".item[data-status='reading']", timeout=TIMEOUT)
    lag = page.evaluate("() => new Promise(r => { const t = performance.now(); "
                        "setTimeout(() => r(performance.now() - t), 0); })")
    assert lag < 250, f"the main thread was blocked for {lag:.0f} ms"
    sent = diagnose_in_page(page)
    f = sent["files"][0]
    payload = len(json.dumps(sent))
    assert payload < size / 100, f"sent {payload} bytes of {size}"
    numbers = dict(f["lines"])
    assert numbers[oom_line].endswith(match_line(library, "cuda-out-of-memory/allocator-oom"))
    assert numbers[oom_line - 3] == "[rank2]: Traceback (most recent call last):"  # the whole traceback
    assert 1 in numbers and f["total_lines"] in numbers  # head and tail
    assert f["bytes"] == size
    assert "hf_abcdefghij" not in json.dumps(sent)
    assert page.inner_text("#headline") == "Rank 2 failed first"
    assert "cuda-out-of-memory/allocator-oom" in page.inner_text(".verdict")
    hit = page.locator(".context li.hit").first.inner_text()
    assert str(oom_line) in hit  # the user's own line number
    assert page.locator(".timeline-wrap svg").get_attribute("data-mode") == "time"
    # two hours of log: the picture spans the incident (each rank's last progress, the OOM, the timeouts)
    DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".timeline-wrap svg").screenshot(path=str(DOCS_SHOTS / "web-timeline-200mb.png"))
    assert "reduced in the browser" in page.inner_text("section[aria-labelledby=inputs-title]")
    assert not page.problems, page.problems


REDUCE_IN_WORKER = """async ({files, lib}) => {
  const worker = new Worker('/static/reducer.js');
  const out = [];
  for (const [i, f] of files.entries()) {
    const file = new File([f.text], 'x.log');
    out.push(await new Promise((resolve, reject) => {
      worker.onmessage = (e) => {
        if (e.data.type === 'done') resolve(e.data.result);
        if (e.data.type === 'error') reject(new Error(e.data.message));
      };
      worker.postMessage({type: 'reduce', job: i, file, keywords: lib.keywords, keepEveryLine: lib.keep_every_line,
                          progress: lib.progress, prefixes: lib.prefixes, options: {hosts: false, wholeLimit: 0}});
    }));
  }
  worker.terminate();
  return out;
}"""


def _summary(d: dict[str, Any]) -> tuple[Any, ...]:
    p = d["primary"] or {}
    return (d["verdict"], p.get("id"), p.get("rank"), [(e["path"], e["line"]) for e in p.get("evidence", [])],
            sorted((c["id"], c["rank"] or -1, c["path"], c["line"]) for c in d["collateral"]))


def test_reduction_keeps_every_lab_diagnosis(page: Any, served: Served) -> None:
    """Every lab capture, cut down by the browser's reducer (even small files), diagnoses as the whole file does."""
    import urllib.request

    if not (LAB / "manifest.json").exists():
        pytest.skip("the lab captures are not in this checkout")
    cases = json.loads((LAB / "manifest.json").read_text())
    page.goto(served.url + "/")
    lib = page.evaluate("() => fetch('/api/library').then(r => r.json())")

    def post(files: list[dict[str, Any]]) -> dict[str, Any]:
        req = urllib.request.Request(served.url + "/api/diagnose?store=false", data=json.dumps({"files": files}).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            result: dict[str, Any] = json.loads(r.read())["diagnosis"]
            return result

    checked = 0
    for case in cases:
        files = [{"name": rel.split("/", 1)[1], "text": (LAB / rel).read_text(errors="replace")} for rel in case["files"]]
        files = [f for f in files if f["text"]]
        reduced = page.evaluate(REDUCE_IN_WORKER, {"files": files, "lib": lib})
        small = [{"name": f["name"], "lines": r["lines"], "total_lines": r["totalLines"]}
                 for f, r in zip(files, reduced, strict=True)]
        full, cut = post(files), post(small)
        assert _summary(cut) == _summary(full), case["case"]
        checked += 1
    assert checked >= 10


# `make screenshots` writes the docs' copies; any other run keeps them with the other artifacts, so a
# test run leaves the checkout as it was (a page shows its own id and time).
DOCS_SHOTS = (Path(__file__).resolve().parents[2] / "docs" / "screenshots" if os.environ.get("TRAINMEDIC_DOCS_SHOTS")
              else SCREENSHOTS)
WIDE_BY = 2  # px of rounding a page may overflow by


@pytest.mark.parametrize("width", [390, 1280])
def test_no_page_scrolls_sideways_and_the_docs_screenshots_are_taken(browser: Any, served: Served, width: int) -> None:
    """The diagnosis, history and encyclopedia pages fit a phone's 390 px and a laptop's 1280 px; the
    diagnosis of the demo's log is screenshotted for the docs at both widths."""
    from tests.conftest import ROOT

    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    try:
        pg.goto(served.url + "/")
        pg.fill("#paste", (ROOT / "examples" / "ddp-worker-killed" / "torchrun.log").read_text())
        diagnose_in_page(pg)
        diagnosis = pg.url
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(DOCS_SHOTS / f"web-diagnosis-{width}.png"))  # the first screen: what one sees
        pg.goto(served.url + "/library/dataloader-worker-failure/shm-exhausted/")
        pg.screenshot(path=str(DOCS_SHOTS / f"encyclopedia-cause-{width}.png"))
        pg.goto(diagnosis)
        # a mark on the timeline jumps to its line among the quoted evidence
        link = pg.locator(".timeline-wrap a.mark-link").first
        target = (link.get_attribute("href") or "").lstrip("#")
        assert target and pg.locator(f"[id='{target}']").count() == 1
        for url in (diagnosis, served.url + "/history", served.url + "/library/",
                    served.url + "/library/dataloader-worker-failure/",
                    served.url + "/library/dataloader-worker-failure/shm-exhausted/"):
            pg.goto(url)
            pg.wait_for_load_state()
            wide = pg.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            assert wide[0] <= wide[1] + WIDE_BY, f"{url} is {wide[0]} px wide in a {wide[1]} px window"
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_fleet_page_fits_and_its_charts_are_screenshotted(browser: Any, served: Served, width: int,
                                                              tmp_path: Path) -> None:
    """`fleet scan` into the server's own database (a seeded fleet from the benchmark's generator, with its
    planted bad host), then /fleet: its charts fit both widths, and the docs get a screenshot."""
    import sys

    from tests.conftest import ROOT, run_cli

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_fleet import generate

    if not (tmp_path.parent / "fleet-scanned").exists():  # once for both widths
        generate(tmp_path / "fleet", 300, seed=11)
        assert run_cli("fleet", "scan", str(tmp_path / "fleet"), "--db", f"sqlite:///{served.db}").code == 0
        (tmp_path.parent / "fleet-scanned").touch()
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    try:
        pg.goto(served.url + "/fleet")
        pg.wait_for_load_state()
        assert pg.locator("svg.bars rect.bar").count() > 3
        wide = pg.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1] + WIDE_BY, f"/fleet is {wide[0]} px wide in a {wide[1]} px window"
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(DOCS_SHOTS / f"web-fleet-{width}.png"), full_page=True)
    finally:
        context.close()
