"""`trainmedic library list|check`: what the library holds, and whether it is sound."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trainmedic.cli.env import Env
from trainmedic.cli.options import add_library_option, open_library
from trainmedic.model import SCHEMA, Diagnosis, ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    lst = sub.add_parser("list", help="list entries, causes, roles and fingerprint counts")
    lst.add_argument("--json", action="store_true", help="machine-readable, with every fingerprint")
    chk = sub.add_parser("check", help="validate the schema, links, fixtures and matcher compilation")
    for q in (lst, chk):
        add_library_option(q, "a library folder (default: the bundled one)")
    dr = sub.add_parser("draft", help="draft an entry for a failure no signature knew, into a team library")
    dr.add_argument("diagnosis", nargs="?", type=Path, metavar="DIAGNOSIS.json",
                    help="a saved `trainmedic diagnose --json` of the failure")
    dr.add_argument("--from-log", nargs="+", metavar="LOG", default=[], help="diagnose these logs and draft from them")
    dr.add_argument("--baseline", metavar="GOOD", action="append", default=[],
                    help="with --from-log: a good run of the same job (its new lines are drafted from)")
    dr.add_argument("--category", default="general", help="the library folder of the entry (default: general)")
    dr.add_argument("--into", type=Path, metavar="DIR", default=None,
                    help="the team library to write into (default: $TRAINMEDIC_LIBRARY; seeded from the "
                         "bundled library when empty)")


def run(args: argparse.Namespace, env: Env) -> int:
    if args.action == "draft":
        return _draft(args, env)
    lib = open_library(args.library, env)
    if lib is None:
        return ExitCode.USAGE if args.action == "list" else ExitCode.FOUND
    if args.action == "list":
        if args.json:
            data: dict[str, object] = {
                "entries": [
                    {
                        "id": e.id, "title": e.title, "category": e.category, "tags": list(e.tags),
                        "summary": e.summary,
                        "causes": [
                            {"id": c.full_id, "title": c.title, "role": c.role,
                             "fingerprints": [{"id": f.id, "regex": f.regex, "weight": f.weight,
                                               "ambiguous": f.ambiguous, "ignore_case": f.ignore_case}
                                              for f in c.fingerprints]}
                            for c in e.causes
                        ],
                    }
                    for e in lib
                ],
            }
            data["counts"] = {"entries": len(lib), "causes": sum(len(e.causes) for e in lib),
                              "fingerprints": sum(1 for _ in lib.fingerprints())}
            json.dump(data, env.stdout, indent=2)
            env.stdout.write("\n")
            return ExitCode.HEALTHY
        for e in lib:
            env.stdout.write(f"{e.id}  [{e.category}]  {e.title}\n")
            for c in e.causes:
                env.stdout.write(f"  {c.full_id:<58} {c.role:<10} {len(c.fingerprints)} fingerprint(s)\n")
        env.stdout.write(f"{len(lib)} entries, {sum(len(e.causes) for e in lib)} causes, "
                         f"{sum(1 for _ in lib.fingerprints())} fingerprints\n")
        return ExitCode.HEALTHY
    from trainmedic.api import reader_patterns
    from trainmedic.fixtures import check_fixtures
    from trainmedic.scan.database import build_scanner, hyperscan_available

    problems = check_fixtures(lib)
    patterns = reader_patterns(lib)
    backends = ["python", "hyperscan"] if hyperscan_available() else ["python"]
    for backend in backends:
        try:
            build_scanner(patterns, backend)
        except Exception as exc:  # any compile failure is a library problem to report
            problems.append(f"{backend} matcher cannot compile the library: {exc}")
    for line in problems:
        env.stdout.write(f"{line}\n")
    n_fp = sum(1 for _ in lib.fingerprints())
    if problems:
        env.stdout.write(f"library check: {len(problems)} problem(s)\n")
        return ExitCode.FOUND
    env.stdout.write(f"library check: ok ({len(lib)} entries, {n_fp} fingerprints, matchers: {', '.join(backends)})\n")
    return ExitCode.HEALTHY


def _draft(args: argparse.Namespace, env: Env) -> int:
    """Write a draft entry (YAML and fixture) into a team library and check that library."""
    import os
    import shutil

    from trainmedic.catalog import LIBRARY_DIR, load_library
    from trainmedic.draft import DraftError, draft
    from trainmedic.fixtures import check_fixtures
    from trainmedic.logs.sources import InputError
    from trainmedic.model import LibraryError

    into = args.into or (Path(os.environ["TRAINMEDIC_LIBRARY"]) if os.environ.get("TRAINMEDIC_LIBRARY") else None)
    if into is None:
        env.error("library draft: say which team library to write into (--into DIR, or set TRAINMEDIC_LIBRARY)")
        return ExitCode.USAGE
    if into.resolve() == LIBRARY_DIR.resolve():
        env.error("library draft: the bundled library is not a team library; use --into DIR")
        return ExitCode.USAGE
    if (args.diagnosis is None) == (not args.from_log):
        env.error("library draft: give either DIAGNOSIS.json or --from-log LOG...")
        return ExitCode.USAGE
    try:
        diagnosis, source = _diagnosis(args, env)
        d = draft(diagnosis, args.category, source)
    except (DraftError, InputError, ValueError, OSError) as exc:
        env.error(f"library draft: {exc}")
        return ExitCode.USAGE
    try:
        if not any(into.glob("*/*.yaml")):
            shutil.copytree(LIBRARY_DIR, into, dirs_exist_ok=True)
            env.stdout.write(f"library draft: {into} started as a copy of the bundled library\n")
        folder = into / d.category
        if any(into.glob(f"*/{d.entry}.yaml")):
            env.error(f"library draft: {into} already has an entry {d.entry!r}")
            return ExitCode.USAGE
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{d.entry}.yaml").write_text(d.yaml, encoding="utf-8")
        (folder / f"{d.entry}.log").write_text(d.log, encoding="utf-8")
    except OSError as exc:
        env.error(f"library draft: cannot write into {into}: {exc.strerror or exc}")
        return ExitCode.USAGE
    env.stdout.write(f"wrote {folder / d.entry}.yaml and .log (fingerprint {d.regex!r})\n")
    try:
        problems = check_fixtures(load_library(into))
    except LibraryError as exc:
        problems = [str(exc)]
    for line in problems:
        env.stdout.write(f"{line}\n")
    if problems:
        return ExitCode.FOUND
    env.stdout.write(f"library check of {into}: ok; replace the TODOs, then share the entry\n")
    return ExitCode.HEALTHY


def _diagnosis(args: argparse.Namespace, env: Env) -> tuple[Diagnosis, str]:
    from trainmedic.report.jsonout import diagnosis_from_json

    if args.diagnosis is not None:
        data = json.loads(args.diagnosis.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ValueError(f"{args.diagnosis}: not a {SCHEMA} diagnosis")
        return diagnosis_from_json(data), str(args.diagnosis)
    from trainmedic.api import Diagnoser
    from trainmedic.logs.sources import expand

    baseline = None
    if args.baseline:
        from trainmedic.cli.baseline import load

        baseline = load(args.baseline, env)
    return Diagnoser(baseline=baseline).diagnose(expand(args.from_log), stdin=env.stdin), " ".join(args.from_log)
