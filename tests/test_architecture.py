"""The shape of the house: no import circle among trainmedic's modules, one way into the pipeline."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "trainmedic").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _graph() -> dict[str, set[str]]:
    """Module -> trainmedic modules it imports, at the top or inside functions (a lazy import is
    still a dependency)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {resolve(a.name) for a in node.names if a.name.startswith("trainmedic")}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("trainmedic"):
                module = node.module or ""
                for a in node.names:
                    full = f"{module}.{a.name}"
                    deps.add(full if full in mods else resolve(module))
        graph[mod] = {d for d in deps if d is not None and d != mod}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_among_trainmedic_modules() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_api_and_the_live_streams_call_the_reasoner() -> None:
    """Faces go through trainmedic.api.Diagnoser; none wraps a Source or calls reason() itself."""
    callers = {mod for mod, deps in _graph().items() if "trainmedic.reason.engine" in deps}
    assert callers <= {"trainmedic.api", "trainmedic.reason", "trainmedic.reason.engine"} | {
        m for m in callers if m.startswith("trainmedic.live.")  # HANG, the id a live view drops
    }
    readers = {mod for mod, deps in _graph().items() if "trainmedic.logs.reader" in deps}
    assert readers <= {"trainmedic.api", "trainmedic.logs.parallel", "trainmedic.logs.reader"} | {
        m for m in readers if m.startswith("trainmedic.live.")  # the ScanState type of a stream
    }


def test_the_version_is_written_once() -> None:
    """pyproject reads it from the package; the editor extension must carry the same one."""
    import json

    import tomllib

    import trainmedic

    root = SRC.parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    extension = json.loads((root / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    assert extension["version"] == trainmedic.__version__
