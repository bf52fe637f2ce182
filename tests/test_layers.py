"""The architecture as a test: contamlab's import graph has no cycle and never imports up the layer order.

Layers, low to high (docs/design.md, "Layers"); a module imports only from its own layer or below:

    metrics/ io errors stopping             pure: numbers in, numbers out; the stop message
    data/ models/ (incl. the model store)   questions, prompts, splits; loading models, where trained models live
    decoding/ detectors/ training/          strategies + samplers; detection methods; the Lightning library
    analysis/                               tables, figures, report, transparency card
    jobs/ (with config, validation,        the only code that reads the Hydra config
          preflight)
    train.py evaluate.py                    thin entry points

Within the middle layer, ``training`` is kept apart from ``decoding`` and ``detectors`` (:data:`APART`).

Every import counts, also those inside functions: a lazy import still ties the two modules together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = "contamlab"

LAYERS: list[tuple[str, ...]] = [
    ("metrics", "io", "errors", "stopping"),
    ("data", "models"),
    ("decoding", "detectors", "training"),
    ("analysis",),
    ("jobs", "config", "validation", "preflight"),
]
ENTRY_POINTS = ("train.py", "evaluate.py")
# Within the middle layer, training is the train job's Lightning library: decoding and detectors never need it
# (where a trained model lives is the model store's answer), and it needs neither of them.
APART = {("decoding", "training"), ("detectors", "training"), ("training", "decoding"), ("training", "detectors")}


def layer_of(module: str) -> int:
    """The layer of a ``contamlab.<part>…`` module (the package's own ``__init__`` is the bottom)."""
    parts = module.split(".")
    if parts == [PACKAGE]:
        return 0
    for level, names in enumerate(LAYERS):
        if parts[1] in names:
            return level
    raise AssertionError(f"{module}: not in any layer; add its package to LAYERS in tests/test_layers.py")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    return {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The contamlab modules that ``path`` imports (``from X import y`` counts as ``X.y`` when that is a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in known else target)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    """Import edges between the package's modules."""
    found = modules()
    known = set(found)
    return {name: imports(path, name, known) & known for name, path in found.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a closed path), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a higher layer, as ``importer -> imported``."""
    return [
        f"{src} (layer {layer_of(src)}) -> {dst} (layer {layer_of(dst)})"
        for src, targets in sorted(edges.items())
        for dst in sorted(targets)
        if layer_of(dst) > layer_of(src)
    ]


def sibling_imports(edges: dict[str, set[str]]) -> list[str]:
    """Imports between middle-layer packages that are kept apart (:data:`APART`)."""
    return [
        f"{src} -> {dst}"
        for src, targets in sorted(edges.items())
        for dst in sorted(targets)
        if len(src.split(".")) > 1 and len(dst.split(".")) > 1 and (src.split(".")[1], dst.split(".")[1]) in APART
    ]


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_upward_import():
    bad = upward_imports(graph())
    assert not bad, "imports up the layer order:\n" + "\n".join(bad)


def test_training_is_apart_from_decoding_and_detectors():
    bad = sibling_imports(graph())
    assert not bad, "imports between decoding / detectors and training:\n" + "\n".join(bad)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_entry_points_call_the_jobs(entry):
    """The entry points are thin: they reach the package only through the jobs (and the config's error boundary)."""
    text = (REPO / entry).read_text()
    assert "contamlab.jobs." in text
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            assert node.module in ("contamlab.config", "contamlab.jobs"), node.module


def test_the_checker_sees_a_forbidden_import(tmp_path):
    """The checks themselves: an upward edge and a cycle are reported."""
    edges = {"contamlab.decoding.lne": {"contamlab.training.stages"}, "contamlab.training.stages": set()}
    assert upward_imports({"contamlab.metrics.gaps": {"contamlab.decoding.lne"}})
    assert not upward_imports(edges)  # same layer: not upward, but kept apart
    assert sibling_imports(edges) == ["contamlab.decoding.lne -> contamlab.training.stages"]
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    module = tmp_path / "contamlab" / "decoding" / "x.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from contamlab.jobs import train\n")
    assert imports(module, "contamlab.decoding.x", {"contamlab.jobs.train"}) == {"contamlab.jobs.train"}
