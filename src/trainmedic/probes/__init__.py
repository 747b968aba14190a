"""Facts about the machine (shm, ulimits, cgroup memory, kernel OOM records, torch settings).

They confirm or refute a cause found in the logs; they never replace log evidence. Each probe is
a small module behind the `Probe` protocol in base.py; runner.py runs them with time limits.
"""

from trainmedic.probes.base import Check, LogSource, Probe, ProbeContext, Status
from trainmedic.probes.kernel_log import KernelRecord, parse_kernel_log
from trainmedic.probes.runner import ALL_PROBES, run_probes

__all__ = [
    "ALL_PROBES",
    "Check",
    "KernelRecord",
    "LogSource",
    "Probe",
    "ProbeContext",
    "Status",
    "parse_kernel_log",
    "run_probes",
]
