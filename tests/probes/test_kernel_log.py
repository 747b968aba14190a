"""The kernel log parser on the formats people really have: dmesg, journalctl -k, kern.log, old kernels."""

from __future__ import annotations

import datetime as dt
import gzip
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.probes.conftest import KERNEL_LOGS
from trainmedic.catalog import Library, load_library
from trainmedic.probes.base import LogSource, ProbeContext, ProbeFact
from trainmedic.probes.facts import kernel_facts, kernel_records_from_file
from trainmedic.probes.kernel_log import KernelLogProbe, KernelRecord, oom_fingerprints, parse_kernel_log

BOOT = 1729126800.0  # 2024-10-17T01:00:00Z, the boot of the recorded host
POD = "/kubepods/burstable/pod7c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f/9b8a7c6d5e4f"


def _read(name: str, **kw: object) -> list[KernelRecord]:
    with (KERNEL_LOGS / name).open() as f:
        return parse_kernel_log(f, **kw)  # type: ignore[arg-type]


def _shape(records: list[KernelRecord]) -> list[tuple[object, ...]]:
    return [(r.kind, r.pid, r.name, r.scope, r.cgroup, r.anon_rss_kb, r.library) for r in records]


EXPECTED = [
    ("oom-kill", 4321, "pt_data_worker", "cgroup", POD, 3984212, None),
    ("oom-kill", 5120, "python", "host", None, 245000000, None),
    ("segfault", 6001, "pt_main_thread", "", None, None, "libtorch_cpu.so"),
    ("trap", 6002, "python", "", None, None, "libc.so.6"),
]


@pytest.mark.parametrize(
    "name",
    ["dmesg.txt", "journalctl-k.txt", "journalctl-k-short.txt", "kern.log", "kern.log-rsyslog-iso"],
)
def test_every_format_gives_the_same_records(name: str) -> None:
    assert _shape(_read(name, year=2024)) == EXPECTED


def test_summary_and_killed_line_merge_into_one_record() -> None:
    first = _read("dmesg.txt")[0]
    assert first.constraint == "CONSTRAINT_MEMCG"
    assert first.task_cgroup == POD
    assert first.total_vm_kb == 8400000 and first.file_rss_kb == 0 and first.shmem_rss_kb == 0
    assert first.uid == 0
    assert first.uptime == pytest.approx(8123.457230)
    assert first.text.endswith("oom_score_adj:939")
    assert first.line == 15  # the "Killed process" line, one-based
    second = _read("dmesg.txt")[1]
    assert second.constraint == "CONSTRAINT_NONE" and second.uid == 1000
    assert second.task_cgroup == "/user.slice/user-1000.slice/session-3.scope"


def test_segfault_and_trap_details() -> None:
    records = _read("dmesg.txt")
    segv, trap = records[2], records[3]
    assert segv.address == "0"
    assert segv.describe().startswith("segfault of pid 6001 (pt_main_thread) in libtorch_cpu.so")
    assert trap.detail == "general protection fault"


def test_times_from_each_format() -> None:
    at = BOOT + 8123.457230
    # dmesg: uptime only; a boot time makes it a date
    assert _read("dmesg.txt")[0].time is None
    assert _read("dmesg.txt", boot_time=BOOT)[0].time == pytest.approx(at, abs=1e-3)
    # journalctl -o short-iso: whole seconds with the offset
    assert _read("journalctl-k.txt")[0].time == pytest.approx(at, abs=1)
    # rsyslog RFC 3339: microseconds
    assert _read("kern.log-rsyslog-iso")[0].time == pytest.approx(at, abs=1e-3)
    # classic syslog: local time without a year, plus the kernel's own uptime
    local = dt.datetime(2024, 10, 17, 3, 15, 23).timestamp()
    rec = _read("kern.log", year=2024)[0]
    assert rec.time == local
    assert rec.uptime == pytest.approx(8123.457230)
    assert "at 2024-10-17 03:15:23" in rec.describe()


def test_syslog_dates_in_the_future_belong_to_last_year() -> None:
    now = dt.datetime(2025, 1, 5, 12, 0, 0).timestamp()
    line = (
        "Dec 30 23:59:59 node kernel: Out of memory: Killed process 7 (python) total-vm:1kB, anon-rss:1kB, file-rss:0kB"
    )
    (rec,) = parse_kernel_log([line], now=now)
    assert rec.time == dt.datetime(2024, 12, 30, 23, 59, 59).timestamp()


def test_old_kernel_task_in_and_sacrifice_child() -> None:
    (rec,) = _read("kern.log-old-kernel")
    assert (rec.kind, rec.pid, rec.name) == ("oom-kill", 2230, "python")
    assert rec.scope == "cgroup"
    assert rec.cgroup == "/docker/0a1b2c3d4e5f"
    assert rec.anon_rss_kb == 4000000 and rec.shmem_rss_kb == 0 and rec.uid is None


@pytest.mark.parametrize(
    "line",
    [
        "[ 8123.489000] oom_reaper: reaped process 4321 (pt_data_worker), now anon-rss:0kB, file-rss:0kB",
        "[ 8123.456789] pt_data_worker invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        "[ 9400.000000] Out of memory and no killable processes...",
        '[ 9500.2] audit: type=1701 audit(1.2:456): pid=6001 comm="pt_main_thread" exe="/usr/bin/python3" sig=11',
        "[  438.812713] [  pid  ]   uid  tgid total_vm      rss rss_anon rss_file pgtables_bytes swapents name",
        "[    3.1] Killed process accounting is disabled",
        "python: caught segfault at address 0x0 (a user-space message, not the kernel's)",
    ],
)
def test_near_misses_are_not_records(line: str) -> None:
    assert parse_kernel_log([line]) == []


def test_other_prefixes() -> None:
    lines = [
        "<3>[  12.000001] Out of memory: Killed process 11 (a) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
        "kern  :err   : [  13.000000] Out of memory: Killed process 12 (b c) total-vm:1kB, anon-rss:2kB, file-rss:0kB",
        "[Thu Oct 17 03:15:23 2024] python3[13]: segfault at 8 ip 00007f00 sp 00007ffd error 6 in libc.so.6[7f00+100]",
        "[  14.0] gpu-node kernel: python[14]: segfault at 0 ip 00007f sp 00007e error 4",  # short-monotonic
    ]
    records = parse_kernel_log(lines)
    assert [(r.pid, r.name) for r in records] == [(11, "a"), (12, "b c"), (13, "python3"), (14, "python")]
    assert records[2].time == dt.datetime(2024, 10, 17, 3, 15, 23).timestamp()
    assert records[3].library is None


def test_records_from_file_and_gzip(tmp_path: Path) -> None:
    assert _shape(kernel_records_from_file(KERNEL_LOGS / "dmesg.txt")) == EXPECTED
    gz = tmp_path / "kern.log.1.gz"
    with gzip.open(gz, "wb") as f:
        f.write((KERNEL_LOGS / "kern.log").read_bytes())
    assert _shape(kernel_records_from_file(gz, year=2024)) == EXPECTED
    with pytest.raises(OSError):
        kernel_records_from_file(tmp_path / "missing.log")


def test_kernel_facts_name_pid_and_line() -> None:
    facts = kernel_facts(kernel_records_from_file(KERNEL_LOGS / "dmesg.txt"), "dmesg.txt")
    assert [(f.id, f.value, f.source) for f in facts] == [
        ("kernel.oom_kill", "pid 4321 (pt_data_worker)", "dmesg.txt:15"),
        ("kernel.oom_kill", "pid 5120 (python)", "dmesg.txt:19"),
        ("kernel.segfault", "pid 6001 (pt_main_thread) in libtorch_cpu.so", "dmesg.txt:21"),
        ("kernel.segfault", "pid 6002 (python) in libc.so.6", "dmesg.txt:24"),
    ]


# ---------------------------------------------------------------- the probe and its sources


def _script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_probe_uses_the_first_readable_source(machine: Callable[..., ProbeContext], tmp_path: Path) -> None:
    denied = _script(tmp_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    no_journal = _script(tmp_path, "journalctl", "echo 'No journal files were found.' >&2; echo '-- No entries --'")
    sources = (
        LogSource("dmesg", argv=(denied,)),
        LogSource("journalctl -k", argv=(no_journal, "-k")),
        LogSource("/var/log/kern.log", path=str(tmp_path / "absent.log")),
        LogSource("/var/log/messages", path=str(KERNEL_LOGS / "kern.log")),
    )
    check = KernelLogProbe().run(machine("bare-metal", kernel_log_sources=sources))
    assert check.status == "warn"
    assert check.value == (
        "/var/log/messages: 2 OOM kills [pid 4321 (pt_data_worker), pid 5120 (python)], "
        "2 segfaults [pid 6001 (pt_main_thread) in libtorch_cpu.so, pid 6002 (python) in libc.so.6]"
    )
    assert check.why.startswith("latest: OOM kill of pid 5120 (python) [anon-rss 233.7 GiB, host] at ")
    assert check.data["source"] == "/var/log/messages"


def test_probe_reads_dmesg_output_with_boot_time(machine: Callable[..., ProbeContext], tmp_path: Path) -> None:
    fake = _script(tmp_path, "dmesg", f"cat {KERNEL_LOGS / 'dmesg.txt'}")
    check = KernelLogProbe().run(machine("docker", kernel_log_sources=(LogSource("dmesg", argv=(fake,)),)))
    assert check.data["oom_kill_count"] == 2
    kills = check.data["oom_kills"]
    assert isinstance(kills, tuple)
    assert kills[0][:2] == (4321, "pt_data_worker")
    assert kills[0][2] == pytest.approx(BOOT + 8123.457230, abs=1e-3)  # btime from the snapshot's /proc/stat


def test_probe_is_unknown_with_reasons_when_nothing_is_readable(
    machine: Callable[..., ProbeContext], tmp_path: Path
) -> None:
    denied = _script(tmp_path, "dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1")
    sources = (
        LogSource("dmesg", argv=(denied,)),
        LogSource("journalctl -k", argv=(str(tmp_path / "no-such-journalctl"),)),
        LogSource("/var/log/kern.log", path=str(tmp_path / "absent.log")),
    )
    check = KernelLogProbe().run(machine("docker", kernel_log_sources=sources))
    assert check.status == "unknown"
    assert check.value == (
        "no kernel log readable: dmesg: read kernel buffer failed: Operation not permitted; "
        "journalctl -k: no-such-journalctl is not installed; /var/log/kern.log: not found"
    ).replace("no-such-journalctl", str(tmp_path / "no-such-journalctl"))
    assert "--dmesg" in check.fix


def test_probe_ok_on_a_clean_log(machine: Callable[..., ProbeContext], tmp_path: Path) -> None:
    clean = tmp_path / "kern.log"
    clean.write_text("Oct 17 01:00:05 h kernel: [    5.12] EXT4-fs (nvme0n1p2): mounted filesystem\n")
    check = KernelLogProbe().run(machine("docker", kernel_log_sources=(LogSource("kern", path=str(clean)),)))
    assert check.status == "ok"
    assert check.value == "kern: no OOM kills or segfaults (1 lines)"


def test_live_kernel_log_never_fails_and_reports_its_source() -> None:
    if shutil.which("dmesg") is None and shutil.which("journalctl") is None:
        pytest.skip("neither dmesg nor journalctl is installed here")
    check = KernelLogProbe().run(ProbeContext(python=""))
    assert check.status in ("ok", "warn", "unknown")
    if check.status != "unknown":
        assert check.data["source"] in ("dmesg", "journalctl -k", "/var/log/kern.log", "/var/log/messages")


# ---------------------------------------------------------------- the library decides what an OOM record is


def _without_kill_records() -> Library:
    lib = load_library()
    return Library(
        tuple(replace(e, causes=tuple(replace(c, kill_record=False) for c in e.causes)) for e in lib.entries)
    )


def test_oom_fingerprints_are_the_library_kill_records() -> None:
    # The same log read with a library that has no kill-record causes gives no OOM kill, only the crashes.
    with (KERNEL_LOGS / "dmesg.txt").open() as f:
        records = parse_kernel_log(f, library=_without_kill_records())
    assert [(r.kind, r.pid) for r in records] == [("segfault", 6001), ("trap", 6002)]


@pytest.mark.parametrize(
    "line",
    [
        "[ 1.0] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,task=python,pid=7,uid=0",
        "[ 1.0] Out of memory: Killed process 7 (python) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
        "[ 1.0] Memory cgroup out of memory: Kill process 7 (python) score 998 or sacrifice child",
        "[ 1.0] Out of memory (oom_kill_allocating_task): Kill process 7 (python) score 0 or sacrifice child",
        "[ 1.0] Killed process 7 (python) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
        "[ 1.0] Killed process 7 (python), UID 0, total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
        "[ 1.0] Killed process 7 ((sd-pam)) total-vm:1kB, anon-rss:2kB, file-rss:0kB, shmem-rss:0kB",
        "[ 1.0] Killed process 7 (python)",
        "[ 1.0] Task in /docker/0a1b killed as a result of limit of /docker/0a1b",
    ],
)
def test_every_oom_line_the_probe_reads_is_a_library_kill_record(line: str) -> None:
    assert oom_fingerprints(load_library()).recognise(line)


def test_oom_kill_allocating_task_gives_the_scope_of_the_next_kill() -> None:
    lines = [
        "[ 1.0] Out of memory (oom_kill_allocating_task): Kill process 7 (python) score 0 or sacrifice child",
        "[ 1.1] Killed process 7 (python)",
    ]
    (rec,) = parse_kernel_log(lines)
    assert (rec.kind, rec.pid, rec.name, rec.scope, rec.line) == ("oom-kill", 7, "python", "host", 2)


def test_records_and_the_probe_state_the_same_facts(machine: Callable[..., ProbeContext]) -> None:
    expected = [
        ProbeFact("kernel.oom_kill", "pid 4321 (pt_data_worker)"),
        ProbeFact("kernel.oom_kill", "pid 5120 (python)"),
        ProbeFact("kernel.segfault", "pid 6001 (pt_main_thread) in libtorch_cpu.so"),
        ProbeFact("kernel.segfault", "pid 6002 (python) in libc.so.6"),
    ]
    assert [r.fact() for r in _read("dmesg.txt")] == expected
    sources = (LogSource("kern", path=str(KERNEL_LOGS / "dmesg.txt")),)
    assert list(KernelLogProbe().run(machine("docker", kernel_log_sources=sources)).facts) == expected
