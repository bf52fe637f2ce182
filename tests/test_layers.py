"""The architecture as a test: contamlab's import graph has no cycle and never imports up the layer order.

Layers, low to high (docs/design.md, "Layers"); a module imports only from its own layer or below:

    metrics/ io errors stopping             pure: numbers in, numbers out; the stop message; a run's provenance;
    provenance console                      which libraries may print
    data/ models/ (incl. the model store)   questions, prompts, splits; loading models, where trained models live
    decoding/ detectors/ training/          strategies + samplers; detection methods; the Lightning library
    analysis/                               tables, figures, report, transparency card
    config validation preflight tracking    reading the Hydra config into typed objects, checking it, W&B runs
    scoring detection stages                the services: a detector's cached scores, detection on a known leak,
                                            training one stage
    audit/                                  the audit's services: model references, non-members, readings,
                                            mitigation, error rates
    jobs/                                   entry points only: each composes the services and runs them
    train.py evaluate.py audit.py           thin entry points

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
    ("metrics", "io", "errors", "stopping", "provenance", "console"),
    ("data", "models"),
    ("decoding", "detectors", "training"),
    ("analysis",),
    ("config", "validation", "preflight", "tracking"),
    ("scoring", "detection", "stages"),
    ("audit",),
    ("studies",),
    ("jobs",),
]
ENTRY_POINTS = ("train.py", "evaluate.py", "audit.py")
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


def jobs_imports(edges: dict[str, set[str]]) -> list[str]:
    """Imports of one ``jobs`` module by another: the jobs are entry points, each composing the services below."""
    return [
        f"{src} -> {dst}"
        for src, targets in sorted(edges.items())
        for dst in sorted(targets)
        if src.startswith(f"{PACKAGE}.jobs.") and dst.startswith(f"{PACKAGE}.jobs")
    ]


def test_no_job_imports_another_job():
    bad = jobs_imports(graph())
    assert not bad, "jobs/ modules import each other (move what they share into a service):\n" + "\n".join(bad)


def private_uses(path: Path, name: str, known: set[str]) -> list[str]:
    """Private names (``_x``) of another project module that ``path`` imports or reaches as ``module._x``.

    Dunder names are not private; a module's own names and the names of third-party modules are not counted.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    bad: list[str] = []
    aliases: dict[str, str] = {}  # a local name bound to a project module -> that module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE or target == name:
                continue
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{target}.{alias.name}"
                elif alias.name.startswith("_") and not alias.name.startswith("__"):
                    bad.append(f"{name} imports {target}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(f"{name} reaches {aliases[node.value.id]}.{node.attr}")
    return bad


def test_no_module_uses_a_private_name_of_another():
    found = modules()
    known = set(found)
    bad = [use for name, path in found.items() for use in private_uses(path, name, known)]
    assert not bad, "private names used across modules (make them public or move them):\n" + "\n".join(bad)


def test_the_private_name_checker_sees_both_forms(tmp_path):
    module = tmp_path / "x.py"
    module.write_text("from contamlab.metrics import verdicts as V\nfrom contamlab.io import _secret\nV._finite([])\n")
    known = {"contamlab.metrics.verdicts", "contamlab.io", "contamlab.analysis.x"}
    assert private_uses(module, "contamlab.analysis.x", known) == [
        "contamlab.analysis.x imports contamlab.io._secret",
        "contamlab.analysis.x reaches contamlab.metrics.verdicts._finite",
    ]
    jobs = {"contamlab.jobs.audit": {"contamlab.jobs.train", "contamlab.audit.models"}}
    assert jobs_imports(jobs) == ["contamlab.jobs.audit -> contamlab.jobs.train"]
