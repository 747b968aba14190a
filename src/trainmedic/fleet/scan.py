"""Diagnose every job of a fleet with the same engine as `diagnose`, on local processes or on Ray.

Each worker reads a job's files where they lie and sends back one row: what the diagnosis says, the
hosts and ranks the job ran on, when it started and failed. Only jobs whose files changed since the
last scan are read; rows are stored in batches, so an interrupted scan resumes where it stopped.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from trainmedic.fleet.jobs import Job

BATCH = 200  # rows per database transaction
CHUNK = 32  # jobs per Ray task
HEAD = 64 * 1024  # bytes of each file read for the job's first timestamp


def _started(files: Iterable[str]) -> float | None:
    from pathlib import Path

    from trainmedic.logs.attribution import parse_time
    from trainmedic.logs.sources import Source

    first: float | None = None
    for f in files:
        try:
            with Source(f, Path(f), None).open() as stream:
                head = stream.read(HEAD).decode("utf-8", "replace")
        except Exception:  # an unreadable or odd file: the diagnosis reports it; no start time from it
            continue
        for line in head.splitlines()[:400]:
            t = parse_time(line)
            if t is not None:
                first = t if first is None else min(first, t)
                break
    return first


# "GPU 3", "device 3", "cuda:3", or the PCI bus of an NVRM Xid line ("Xid (PCI:0000:3b:00)")
_GPU = re.compile(r"\b(?:GPU|[Dd]evice|cuda:) ?#?(\d{1,3})\b"
                  r"|\bPCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\b")


def gpu_of(text: str) -> str | None:
    m = _GPU.search(text[:2000])
    if m is None:
        return None
    return f"GPU {m.group(1)}" if m.group(1) is not None else f"PCI {m.group(2).lower()}"


def diagnose_job(job: Job) -> dict[str, Any]:
    """One job's row (runs in a worker: a local process or a Ray task)."""
    from trainmedic.api import diagnose
    from trainmedic.logs.attribution import host_from_path
    from trainmedic.reason.templates import mask

    row: dict[str, Any] = {"job": job.id, "signature": job.signature, "verdict": "unreadable", "primary_id": None,
                           "host": None, "rank": None, "gpu": None, "hosts": "", "ranks": None, "started": None,
                           "failed": None, "gpu_hours": None, "template": None, "error": None, "diagnosis": None}
    try:
        d = diagnose(list(job.files))
    except Exception as exc:  # one bad job is reported in its row; the fleet goes on
        row["error"] = f"{type(exc).__name__}: {exc}"[:500]
        return row
    p = d.primary
    hosts = {h for f in job.files if (h := host_from_path(f))}
    if p is not None and p.host:
        hosts.add(p.host)
    ranks = {r for i in d.inputs for r in i.ranks}
    started = _started(job.files)
    failed = p.time if p is not None else None
    world = max(ranks) + 1 if ranks else None
    row.update(verdict=d.verdict, primary_id=p.id if p else None, host=p.host if p else None,
               rank=p.rank if p else None, hosts=",".join(sorted(hosts)), ranks=world, started=started,
               failed=failed, diagnosis=d.to_json())
    if p is not None:
        row["gpu"] = next((g for e in p.evidence for g in [gpu_of(e.text)] if g), None)
    if world and started is not None and failed is not None and failed >= started:
        row["gpu_hours"] = round(world * (failed - started) / 3600, 4)
    if p is not None and p.id.startswith("unclassified-failure/") and p.evidence:
        row["template"] = mask(p.evidence[0].text)[:500]
    return row


def _diagnose_jobs(jobs: list[Job]) -> list[dict[str, Any]]:
    return [diagnose_job(j) for j in jobs]


def _local(jobs: list[Job], workers: int) -> Iterator[dict[str, Any]]:
    if workers <= 1 or len(jobs) <= 1:
        yield from map(diagnose_job, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(diagnose_job, jobs, chunksize=max(1, min(32, len(jobs) // (workers * 8))))


def _ray(jobs: list[Job], address: str) -> Iterator[dict[str, Any]]:
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("--ray needs Ray: pip install 'trainmedic[fleet]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
                 include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    remote = ray.remote(_diagnose_jobs)
    try:
        # a task per CHUNK jobs: a task costs the driver about a millisecond, a small job about as much
        pending = [remote.remote(jobs[i:i + CHUNK]) for i in range(0, len(jobs), CHUNK)]
        while pending:  # rows come back as they finish, so they are stored in batches as they arrive
            done, pending = ray.wait(pending, num_returns=min(len(pending), 8), timeout=5.0)
            for rows in ray.get(done):
                yield from rows
    finally:
        if started_here and address == "local":
            ray.shutdown()


def scan(jobs: Iterable[Job], known: dict[str, str], store_rows: Callable[[list[dict[str, Any]]], int], *,
         workers: int | None = None, ray_address: str | None = None) -> tuple[int, int]:
    """Diagnose the jobs whose signature changed; returns (read, unchanged)."""
    todo, same = [], 0
    for job in jobs:
        if known.get(job.id) == job.signature:
            same += 1
        else:
            todo.append(job)
    rows = _ray(todo, ray_address) if ray_address else _local(todo, workers or max(1, os.cpu_count() or 1))
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            store_rows(batch)
            batch = []
    store_rows(batch)
    return len(todo), same
