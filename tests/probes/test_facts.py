"""Checks become facts for the reasoner, in-process and through a doctor JSON written elsewhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from trainmedic.probes.base import Check, MiB, ProbeContext, ProbeFact
from trainmedic.probes.facts import (
    collect_facts,
    doctor_json,
    facts_from_checks,
    facts_from_doctor_json,
    save_doctor_json,
)
from trainmedic.probes.runner import run_probes
from trainmedic.probes.torch_env import TorchProbe

Machine = Callable[..., ProbeContext]

TORCH_DATA = {"start_method": "fork", "sharing_strategy": "file_descriptor"}
TORCH = Check(
    id="torch",
    status="ok",
    value=(
        "torch 2.13.0+cpu, start method fork, sharing strategy file_descriptor, CUDA available no, "
        "CUDA initialised n/a (fresh interpreter)"
    ),
    data=TORCH_DATA,
    facts=TorchProbe.facts(TORCH_DATA),  # a probe states its facts with the check it returns
)


def _facts(checks: list[Check]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in facts_from_checks(checks):
        out.setdefault(f.id, []).append(f.value)
    return out


DOCKER_FACTS = {
    "shm.size_bytes": [str(64 * MiB)],
    "shm.free_bytes": [str(63 * MiB)],
    "shm.demand_bytes": [str(64 * MiB)],
    "container.kind": ["docker"],
    "nofile.soft": ["1048576"],
    "nofile.hard": ["1048576"],
    "nproc.limit": ["unlimited"],
    "memory.cgroup_limit_bytes": [str(2048 * MiB)],
    "memory.cgroup_peak_bytes": ["2040109465"],
    "memory.oom_kill_count": ["3"],
    "kernel.oom_kill": ["pid 4321 (pt_data_worker)", "pid 5120 (python)"],
    "kernel.segfault": ["pid 6001 (pt_main_thread) in libtorch_cpu.so", "pid 6002 (python) in libc.so.6"],
    "torch.sharing_strategy": ["file_descriptor"],
    "torch.start_method": ["fork"],
}


def test_docker_facts(machine: Machine) -> None:
    checks = [*run_probes(machine("docker", workers=4, batch_bytes=8 * MiB)), TORCH]
    assert _facts(checks) == DOCKER_FACTS
    assert all(f.source.startswith("probe:") for f in facts_from_checks(checks))


def test_each_probe_states_its_facts_with_its_check(machine: Machine) -> None:
    checks = {c.id: c for c in run_probes(machine("docker", workers=4, batch_bytes=8 * MiB))}
    assert checks["shm"].facts == (
        ProbeFact("shm.size_bytes", 64 * MiB),
        ProbeFact("shm.free_bytes", 63 * MiB),
        ProbeFact("shm.demand_bytes", 64 * MiB),
    )
    assert checks["memory"].facts[0] == ProbeFact("memory.cgroup_limit_bytes", 2048 * MiB)  # exact, not parsed
    assert checks["cpu"].facts == () and checks["storage"].facts == ()


def test_doctor_json_without_data_reads_each_value_back(machine: Machine, tmp_path: Path) -> None:
    # doctor JSON written before it carried `data`: each probe reads its own value text back.
    checks = [*run_probes(machine("docker", workers=4, batch_bytes=8 * MiB)), TORCH]
    doc = doctor_json(checks, host="h", time=0)
    for check in doc["checks"]:
        del check["data"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    facts: dict[str, list[str]] = {}
    for f in facts_from_doctor_json(path):
        facts.setdefault(f.id, []).append(f.value)
    assert facts == DOCKER_FACTS  # sizes round to the printed unit: 63 MiB and 1.9 GiB happen to be exact here


def test_unknown_checks_give_no_facts() -> None:
    assert facts_from_checks([Check(id="shm", status="unknown", value="cannot statvfs /dev/shm")]) == []


def test_doctor_json_round_trip_gives_the_same_facts(machine: Machine, tmp_path: Path) -> None:
    checks = [*run_probes(machine("kubernetes", workers=4, batch_bytes=8 * MiB)), TORCH]
    path = tmp_path / "doctor.json"
    save_doctor_json(path, checks, host="trainer-0")
    doc = json.loads(path.read_text())
    assert set(doc) == {"checks", "host", "time"}
    assert all(set(c) == {"id", "status", "value", "threshold", "why", "fix", "data"} for c in doc["checks"])
    remote = facts_from_doctor_json(path)
    local = facts_from_checks(checks)
    # `data` carries the exact numbers: the round trip is exact, not approximate.
    assert [(f.id, f.value) for f in remote] == [(f.id, f.value) for f in local]
    assert remote[0].source.startswith(f"{path} (trainer-0, ")


def test_doctor_json_with_data_is_read_exactly(tmp_path: Path) -> None:
    doc = doctor_json([TORCH], host="h", time=0)
    doc["checks"][0]["data"] = {"start_method": "spawn", "sharing_strategy": "file_system"}
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    assert [(f.id, f.value) for f in facts_from_doctor_json(path)] == [
        ("torch.sharing_strategy", "file_system"),
        ("torch.start_method", "spawn"),
    ]
    assert doc["time"] == "1970-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not JSON"),
        ('{"checks": 3}', "expected the output of `trainmedic doctor --json`"),
        ('{"checks": [{"status": "ok"}]}', "checks[0] has no id"),
        ('{"checks": [{"id": "shm", "status": "great"}]}', "checks[0] (shm) has status 'great'"),
    ],
)
def test_bad_doctor_json_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        facts_from_doctor_json(path)


def test_collect_facts_on_this_machine() -> None:
    facts = collect_facts(ProbeContext(python=""))
    ids = {f.id for f in facts}
    assert {"shm.size_bytes", "shm.free_bytes", "container.kind"} <= ids
