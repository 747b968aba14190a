"""A Prometheus endpoint for a live run, so a team can alert on a fingerprint or on a silent job.

Bound to 127.0.0.1 only: a node exporter or a sidecar scrapes it; nothing is exposed off the host.
The registry is private, so two runs in one process (tests) never share counters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from trainmedic.model import Diagnosis, Match

VERDICTS = ("failure", "hang", "healthy")


class Metrics:
    """Counters per fingerprint and rank, seconds since progress and output, the current verdict."""

    def __init__(self, port: int, *, addr: str = "127.0.0.1", since_progress: Callable[[], float],
                 since_output: Callable[[], float]) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self.matches = Counter("trainmedic_fingerprint_matches", "Log lines matched, per fingerprint and rank",
                               ["fingerprint", "cause", "rank"], registry=self.registry)
        self.hangs = Counter("trainmedic_watchdog_hangs", "Times the hang watchdog fired", registry=self.registry)
        progress = Gauge("trainmedic_seconds_since_progress", "Seconds since the last new progress line",
                         registry=self.registry)
        progress.set_function(since_progress)
        output = Gauge("trainmedic_seconds_since_output", "Seconds since the last output",
                       registry=self.registry)
        output.set_function(since_output)
        self.verdict = Gauge("trainmedic_verdict", "1 for the current verdict, 0 for the others", ["verdict"],
                             registry=self.registry)
        self.primary = Gauge("trainmedic_primary", "1 for the current primary finding", ["cause", "rank"],
                             registry=self.registry)
        self.running = Gauge("trainmedic_command_running", "1 while the command runs", registry=self.registry)
        self.exit_code = Gauge("trainmedic_command_exit_code", "The command's exit code, once it exited",
                               registry=self.registry)
        self.updated = Gauge("trainmedic_last_diagnosis_timestamp_seconds", "When the verdict was last computed",
                             registry=self.registry)
        self._primary_labels: tuple[str, str] | None = None
        self._server: Any
        self._server, self._thread = start_http_server(port, addr=addr, registry=self.registry)
        self.port = int(self._server.server_port)
        self.addr = addr
        self.set_verdict(None)

    @property
    def url(self) -> str:
        return f"http://{self.addr}:{self.port}/metrics"

    def count(self, matches: Iterable[Match]) -> None:
        for m in matches:
            rank = "unknown" if m.line.rank is None else str(m.line.rank)
            self.matches.labels(m.fingerprint, m.cause, rank).inc()

    def set_verdict(self, d: Diagnosis | None) -> None:
        current = d.verdict if d is not None else "healthy"
        for v in VERDICTS:
            self.verdict.labels(v).set(1 if v == current else 0)
        if self._primary_labels is not None:
            self.primary.labels(*self._primary_labels).set(0)
        if d is not None and d.primary is not None:
            self._primary_labels = (d.primary.id, "unknown" if d.primary.rank is None else str(d.primary.rank))
            self.primary.labels(*self._primary_labels).set(1)
        if d is not None:
            self.updated.set(time.time())

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def listen(port: int, env: Any, since_progress: Callable[[], float],
           since_output: Callable[[], float]) -> Metrics | None:
    """The endpoint for `run` and `watch`; None after one error line when the port cannot be opened."""
    try:
        return Metrics(port, since_progress=since_progress, since_output=since_output)
    except OSError as exc:
        env.error(f"--metrics-port {port}: cannot listen on 127.0.0.1: {exc.strerror or exc}")
        return None
