"""`trainmedic lab`: reproduce failures with real PyTorch programs and check the diagnosis of their logs.

`lab list` shows the cases and whether this machine can run them; `lab run CASE|all` runs them,
diagnoses each capture and compares with the case's ground truth, so a diagnosis is proven on what
PyTorch really prints rather than on imitations. Exit 0 when every case that ran matched, 1 when
one did not, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trainmedic.cli.env import Env
from trainmedic.model import ExitCode
from trainmedic.torch.lab import cases as lab_cases
from trainmedic.torch.lab.cases import Case, Outcome
from trainmedic.util.text import rank_label

Status = Literal["pass", "fail", "skip", "captured"]
Diagnose = Callable[[list[str]], Any]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lab_command", metavar="SUBCOMMAND", required=True)
    p_list = sub.add_parser("list", help="list the cases, their ground truth and whether they run here")
    p_list.add_argument("--json", action="store_true", help="print JSON")
    p_run = sub.add_parser("run", help="run cases, diagnose their logs, compare with the ground truth")
    p_run.add_argument("cases", nargs="+", metavar="CASE", help="case names, or 'all'")
    p_run.add_argument("--out", metavar="DIR", help="keep the captured logs in DIR/<case>/ (default: discard)")
    p_run.add_argument("--json", action="store_true", help="print one JSON object")
    p_run.add_argument(
        "--no-diagnose", action="store_true", help="only reproduce and capture; check the capture, not a diagnosis"
    )


def run(args: argparse.Namespace, env: Env) -> int:
    if args.lab_command == "list":
        return _list(args, env)
    return _run(args, env)


# ---------------------------------------------------------------- list


def _requirements(case: Case) -> list[str]:
    needs = []
    if case.shm_size:
        needs.append(f"private /dev/shm of {case.shm_size}")
    if case.cgroup_memory_mb:
        needs.append(f"memory cgroup of {case.cgroup_memory_mb} MiB")
    if case.kernel_log:
        needs.append("kernel log")
    return needs


def _expected(case: Case) -> str:
    if case.expected_verdict == "healthy":
        return "healthy"
    what = case.expected_id or f"{case.expected_verdict}, cause not in the log"
    return what if case.expected_rank is None else f"{what} @ {rank_label(case.expected_rank)}"


def _list(args: argparse.Namespace, env: Env) -> int:
    from trainmedic.torch.lab import runner

    rows = [(case, runner.skip_reason(case)) for case in lab_cases.CASES]
    if args.json:
        out = [
            {
                "case": case.name,
                "description": case.description,
                "program": case.program,
                "args": list(case.args),
                "launcher": case.launcher,
                "nproc": case.nproc,
                **case.ground_truth(),
                "requires": _requirements(case),
                "time_limit": case.time_limit,
                "runs_here": reason is None,
                "skip_reason": reason,
            }
            for case, reason in rows
        ]
        env.stdout.write(json.dumps(out, indent=2) + "\n")
        return ExitCode.HEALTHY
    width = max(len(c.name) for c in lab_cases.CASES)
    for case, reason in rows:
        env.stdout.write(f"{case.name:<{width}}  {_expected(case)}\n")
        env.stdout.write(f"{'':<{width}}  {case.description}\n")
        if reason:
            env.stdout.write(f"{'':<{width}}  cannot run here: {reason}\n")
    return ExitCode.HEALTHY


# ---------------------------------------------------------------- run


@dataclass
class CaseReport:
    case: Case
    status: Status
    reasons: list[str] = field(default_factory=list)
    got: Outcome | None = None
    files: list[str] = field(default_factory=list)
    duration: float = 0.0
    returncode: int | None = None
    command: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "case": self.case.name,
            "status": self.status,
            "reasons": self.reasons,
            "expected": self.case.ground_truth(),
            "got": self.got.to_json() if self.got else None,
            "files": self.files,
            "duration_s": round(self.duration, 2),
            "returncode": self.returncode,
            "command": self.command,
        }

    def line(self) -> str:
        tag = self.status.upper()
        name = self.case.name
        if self.status == "skip":
            return f"SKIP  {name}: {'; '.join(self.reasons)}"
        took = f"({self.duration:.1f} s)"
        if self.status == "fail":
            return f"FAIL  {name}: {'; '.join(self.reasons)} {took}"
        if self.got is None:
            return f"{tag:<5} {name}: reproduced as expected {took}"
        rank = "-" if self.got.rank is None else str(self.got.rank)
        collateral = ",".join(map(str, sorted(self.got.collateral_ranks))) or "-"
        found = self.got.id or "no cause"
        return f"{tag:<5} {name}: {self.got.verdict} {found} rank={rank} collateral={collateral} {took}"


def _select(names: Sequence[str]) -> list[Case]:
    if list(names) == ["all"]:
        return list(lab_cases.CASES)
    selected: list[Case] = []
    for name in names:
        case = lab_cases.get(name)  # KeyError names the known cases
        if case not in selected:
            selected.append(case)
    return selected


def _load_diagnose() -> Diagnose:
    from trainmedic.api import diagnose

    def call(paths: list[str]) -> Any:
        return diagnose(paths)

    return call


def run_one(case: Case, directory: Path, diagnose: Diagnose | None) -> CaseReport:
    """Reproduce `case` into `directory`, check the capture, then (optionally) its diagnosis."""
    from trainmedic.torch.lab import runner

    result = runner.run_case(case, directory)
    if result.skipped is not None:
        return CaseReport(case, "skip", [result.skipped])
    report = CaseReport(
        case,
        "pass" if diagnose else "captured",
        files=[str(p) for p in result.paths],
        duration=result.duration,
        returncode=result.returncode,
        command=result.command_line,
    )
    if result.timed_out:
        report.reasons.append(f"hit the time limit of {case.time_limit:.0f} s")
    report.reasons += [f"reproduction: {p}" for p in lab_cases.capture_problems(case, result.paths)]
    if diagnose is not None:
        try:
            report.got = Outcome.of(diagnose([str(p) for p in result.paths]))
        except Exception as exc:  # one broken diagnosis must not hide the other cases' results
            report.reasons.append(f"diagnose raised {type(exc).__name__}: {exc}")
        else:
            report.reasons += lab_cases.mismatches(case, report.got,
                                                   lab_cases.silenced_by_teardown(case, result.paths))
    if report.reasons:
        report.status = "fail"
    return report


def _run(args: argparse.Namespace, env: Env) -> int:
    try:
        selected = _select(args.cases)
    except KeyError as exc:
        env.error(str(exc.args[0]))
        return ExitCode.USAGE
    diagnose: Diagnose | None = None
    if not args.no_diagnose:
        try:
            diagnose = _load_diagnose()
        except ImportError as exc:
            env.error(f"cannot diagnose ({exc}); use --no-diagnose to only reproduce and capture")
            return ExitCode.USAGE
    keep = args.out is not None
    root = Path(args.out) if keep else Path(tempfile.mkdtemp(prefix="trainmedic-lab-out-"))
    reports: list[CaseReport] = []
    try:
        for case in selected:
            if env.stderr_isatty and not args.json:
                env.stderr.write(f"running {case.name} ...\r")
                env.stderr.flush()
            report = run_one(case, root / case.name, diagnose)
            if not keep:
                report.files = [str(Path(f).relative_to(root)) for f in report.files]
            reports.append(report)
            if not args.json:
                env.stdout.write(report.line() + "\n")
                env.stdout.flush()
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    counts = {s: sum(r.status == s for r in reports) for s in ("pass", "fail", "skip", "captured")}
    if args.json:
        out = {"cases": [r.to_json() for r in reports], "summary": counts, "logs": str(root) if keep else None}
        env.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        where = f"; logs in {root}" if keep else ""
        env.stdout.write(f"{summary}{where}\n")
    return ExitCode.FOUND if counts["fail"] else ExitCode.HEALTHY
