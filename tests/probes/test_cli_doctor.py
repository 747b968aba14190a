"""`trainmedic doctor` through the real entry point with injected streams: JSON shape and exit codes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest

from trainmedic.probes.base import Check, ProbeContext

Cli = Callable[..., Any]  # tests/conftest.py: run the real CLI with injected streams

KEYS = {"id", "status", "value", "threshold", "why", "fix", "data"}  # data: the exact numbers
IDS = ["shm", "container", "nofile", "nproc", "memory", "kernel-log", "torch", "cpu", "storage"]


def test_json_shape_and_exit_code_on_this_machine(cli: Cli) -> None:
    result = cli("doctor", "--json")
    doc = json.loads(result.out)
    assert set(doc) == {"checks", "host", "time"}
    assert [c["id"] for c in doc["checks"]] == IDS
    for check in doc["checks"]:
        assert set(check) == KEYS
        assert check["status"] in ("ok", "warn", "fail", "unknown")
    dt.datetime.fromisoformat(doc["time"])
    assert doc["host"]
    failing = any(c["status"] == "fail" for c in doc["checks"])
    assert result.code == (1 if failing else 0)
    assert result.err == ""


def test_demand_beyond_free_shm_fails_with_exit_1(cli: Cli) -> None:
    result = cli("doctor", "--json", "--workers", "1000", "--batch-bytes", "1TiB", "--prefetch-factor", "4")
    assert result.code == 1
    shm = json.loads(result.out)["checks"][0]
    assert shm["status"] == "fail"
    assert "demand 4000 TiB (1000 workers x 4 prefetch x 1 TiB)" in shm["value"]


def _fake(status: str) -> Any:
    def run_probes(ctx: ProbeContext) -> list[Check]:
        assert ctx.workers == 2 and ctx.batch_bytes == 64 * 1024 * 1024 and ctx.prefetch_factor is None
        return [Check(id="shm", status=status, value="size 1 GiB, free 1 GiB")]  # type: ignore[arg-type]

    return run_probes


@pytest.mark.parametrize(("status", "code"), [("ok", 0), ("warn", 0), ("unknown", 0), ("fail", 1)])
def test_exit_code_follows_the_worst_status(cli: Cli, monkeypatch: pytest.MonkeyPatch, status: str, code: int) -> None:
    monkeypatch.setattr("trainmedic.cli.doctor.run_probes", _fake(status))
    result = cli("doctor", "--json", "--workers", "2", "--batch-bytes", "64M")
    assert result.code == code
    assert json.loads(result.out)["checks"] == [
        {"id": "shm", "status": status, "value": "size 1 GiB, free 1 GiB", "threshold": "", "why": "", "fix": "",
         "data": {}}
    ]


def test_table_lists_every_check(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("trainmedic.cli.doctor.run_probes", _fake("warn"))
    result = cli("doctor", "--workers", "2", "--batch-bytes", "64MiB")
    assert result.code == 0
    assert "shm" in result.out and "warn" in result.out and "size 1 GiB, free 1 GiB" in result.out
    assert "\x1b[" not in result.out  # no colour codes when stdout is not a terminal
    assert result.out.rstrip().endswith("1 warn")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "2", "--batch-bytes", "12Q"], "not a size: '12Q'"),
        (["--workers", "-1"], "argument --workers: must be at least 0, got -1"),
        (["--workers", "two"], "argument --workers: must be a whole number, got 'two'"),
        (["--workers", "2", "--prefetch-factor", "0"], "argument --prefetch-factor: must be at least 1, got 0"),
        (["--batch-bytes", "8M"], "--batch-bytes needs --workers"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(cli: Cli, argv: list[str], message: str) -> None:
    result = cli("doctor", *argv)
    assert result.code == 2
    assert result.out == ""
    assert result.err.count("\n") == 1, result.err
    assert result.err.startswith("trainmedic: error: ")
    assert message in result.err
    assert "Traceback" not in result.err


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("64M", 64 << 20),
        ("64MiB", 64 << 20),
        ("2GiB", 2 << 30),
        ("1.5G", 3 << 29),
        ("500MB", 500_000_000),
    ],
)
def test_sizes(text: str, size: int) -> None:
    from trainmedic.probes.base import format_size, parse_size

    assert parse_size(text) == size
    assert parse_size(format_size(size)) == pytest.approx(size, rel=0.05)


def test_one_line_per_check_and_details_only_for_what_is_wrong(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    checks = [Check(id="shm", status="ok", value="size 8 GiB, free 8 GiB", why="workers pass batches through it"),
              Check(id="nofile", status="fail", value="soft 1024", threshold="soft >= 4096",
                    why="one descriptor per tensor in flight", fix="ulimit -n 65536")]
    monkeypatch.setattr("trainmedic.cli.doctor.run_probes", lambda ctx: checks)
    out = cli("doctor").out.splitlines()
    assert out[0].startswith("trainmedic doctor on ")
    assert out[1].startswith("hint: ") and "--workers N --batch-bytes B" in out[1]  # no demand given: the hint leads
    assert out[2] == "[✓] shm     size 8 GiB, free 8 GiB"  # ok: one line, no why
    assert out[3].startswith("[✗] nofile  soft 1024")
    assert "    why: one descriptor per tensor in flight" in out and "    fix: ulimit -n 65536" in out
    assert "workers pass batches" not in "\n".join(out)
    full = cli("doctor", "--verbose").out
    assert "workers pass batches through it" in full and "threshold: soft >= 4096" in full
