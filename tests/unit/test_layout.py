"""The package's house rules (ARCHITECTURE.md, "Layers"; issue 22): the import graph of ``src/`` has no
cycle and no upward import, and the package root holds only the door and the shared modules.

Every ``import`` counts, at module level or inside a function (a cycle hidden in a function is still a
cycle), except those under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "ecs_guardrail"

#: the root's modules: the door (``cli``, its generated reference) and what Lambda, CLI and IaC tests share
ROOT_MODULES = {"__init__", "cli", "cli_reference", "settings", "routing", "iam"}

#: layer -> the layers it may import (besides itself), as ARCHITECTURE.md's layer table says. ``shared`` is
#: settings, routing and iam: what Lambda, CLI and the IaC tests share. ``validation`` (issue 34) is the model
#: kit under every layer (msgspec models with per-field checks): core's event models and the settings use it.
ALLOWED = {
    "validation": set(),
    "core": {"validation"},
    "adapters": {"core", "validation"},
    "shared": {"core", "validation"},
    "handlers": {"core", "adapters", "shared", "validation"},
    "replay": {"core", "adapters", "handlers", "shared", "validation"},
    "app": {"core", "adapters", "shared", "replay", "validation"},
    "door": {"core", "adapters", "handlers", "shared", "replay", "app", "door", "validation"},
}

#: the module that holds each kind of thing (issue 34, "rooms named for what they hold")
ROOMS = {
    "core/summary.py": "the service and job summaries",
    "core/deployment_protection.py": "deployment protection",
    "validation/fields.py": "the validation kit",
    "replay/settings_sweep.py": "replay --sweep's settings grid",
    "handlers/sweep.py": "the scheduled recovery sweep",
    "handlers/probe.py": "the probe steps of RECOVERY=probe",
}


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "door"
    if parts[1] in ("core", "adapters", "handlers", "replay", "app", "validation"):
        return parts[1]
    return "door" if parts[1] in ("cli", "cli_reference") else "shared"


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


@functools.cache  # both import tests read one parse of src/ (neither changes the graph)
def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    modules = {_module(p) for p in SRC.rglob("*.py")}
    for path in sorted(SRC.rglob("*.py")):
        name = _module(path)
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # a relative import: resolve it against the importing package
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                if t.startswith("ecs_guardrail"):
                    while t not in modules and "." in t:
                        t = t.rsplit(".", 1)[0]
                    if t in modules and t != name:
                        out.add(t)
        graph[name] = out
    return graph


def test_the_root_holds_only_the_door_and_the_shared_modules() -> None:
    root = {p.stem for p in SRC.glob("*.py")}
    assert root == ROOT_MODULES, f"move {sorted(root - ROOT_MODULES)} into a layer (app/, replay/, …)"


def test_each_room_is_where_its_name_says() -> None:
    missing = [f"{path} ({what})" for path, what in ROOMS.items() if not (SRC / path).is_file()]
    assert not missing, missing
    assert not (SRC / "core" / "episode.py").exists(), "core/episode.py holds the summaries: core/summary.py"
    assert not (SRC / "replay" / "sweep.py").exists(), "replay --sweep's grid is replay/settings_sweep.py"


def test_no_upward_import() -> None:
    wrong = []
    for module, targets in _imports().items():
        layer = _layer(module)
        for t in targets:
            if t == "ecs_guardrail":
                continue  # the package's __version__
            if _layer(t) != layer and _layer(t) not in ALLOWED[layer]:
                wrong.append(f"{module} ({layer}) imports {t} ({_layer(t)})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle() -> None:
    graph = _imports()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
