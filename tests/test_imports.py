"""Imports run one way: front doors (api, cli) → pipeline → engines (cpu, gpu) → model/params/io → config/errors.

Every import statement of every module under ``rnapipe/`` counts, those inside functions too: an import inside a
function still makes a circle, it only moves the failure from import time to the first call. The graph is built
from the source text (``ast``), so the test needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rnapipe"

# Modules below the pipeline: they may not import the pipeline or the front doors.
LOWER = ("rnapipe.cpu", "rnapipe.gpu", "rnapipe.model", "rnapipe.params", "rnapipe.io", "rnapipe.energy",
         "rnapipe.structure", "rnapipe.alphabet", "rnapipe.memory", "rnapipe.config", "rnapipe.errors",
         "rnapipe._version")
FRONT = ("rnapipe.api", "rnapipe.cli")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """module -> the rnapipe modules it imports (a name imported from a package counts as its submodule when
    there is one, else as the package)."""
    files = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in files else stem for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in files:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                if target and target != mod:
                    edges[mod].add(target)
    return edges


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _under(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def test_the_circle_finder_finds_a_planted_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(edges) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    circles = _circles(_graph())
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


@pytest.mark.parametrize("lower", LOWER)
def test_lower_layers_import_neither_pipeline_nor_front_doors(lower):
    edges = _graph()
    bad = sorted(f"{m} imports {t}" for m, targets in edges.items() if _under(m, (lower,))
                 for t in targets if _under(t, FRONT + ("rnapipe.pipeline",)) or t == "rnapipe")
    assert not bad, "; ".join(bad)


def test_pipeline_does_not_import_the_front_doors():
    edges = _graph()
    bad = sorted(f"{m} imports {t}" for m, targets in edges.items() if _under(m, ("rnapipe.pipeline",))
                 for t in targets if _under(t, FRONT) or t == "rnapipe")
    assert not bad, "; ".join(bad)


def test_the_graph_sees_imports_inside_functions():
    """The graph is only worth trusting if it reads lazy imports: the CPU-only path keeps CuPy's engine modules
    behind imports inside functions, and those must be in it."""
    edges = _graph()
    assert "rnapipe.pipeline.hybrid.auto" in edges["rnapipe.pipeline.choose"]     # imported inside folder_for
