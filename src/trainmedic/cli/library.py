"""`trainmedic library list|check`: what the library holds, and whether it is sound."""

from __future__ import annotations

import argparse
import json

from trainmedic.cli.env import Env
from trainmedic.cli.options import add_library_option, open_library
from trainmedic.model import ExitCode


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    lst = sub.add_parser("list", help="list entries, causes, roles and fingerprint counts")
    lst.add_argument("--json", action="store_true", help="machine-readable, with every fingerprint")
    chk = sub.add_parser("check", help="validate the schema, links, fixtures and matcher compilation")
    for q in (lst, chk):
        add_library_option(q, "a library folder (default: the bundled one)")


def run(args: argparse.Namespace, env: Env) -> int:
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
    from trainmedic.fixtures import check_fixtures
    from trainmedic.scan.database import STRUCTURE, build_scanner, hyperscan_available, library_patterns

    problems = check_fixtures(lib)
    patterns = [*library_patterns(lib), *STRUCTURE]
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
