"""The package's layout: one subpackage per stage of the data flow, imports only pointing back
to earlier stages (or the stage itself), and no import circle (docs/development.md)."""

import ast
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "src" / "perfstudy"
# Each stage may import the stages before it, never one after it.
STAGES = ["common", "data", "measure", "run", "decide", "present", "orchestrate"]


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every perfstudy module this file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("perfstudy"):
            for alias in node.names:  # `from perfstudy.run import train` imports a module
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if _exists(candidate) else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("perfstudy")}
    return found


def _exists(module: str) -> bool:
    path = PACKAGE.parent.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in PACKAGE.rglob("*.py")}


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_every_module_lives_in_a_stage():
    loose = [m for m in _graph() if m != "perfstudy" and _stage(m) is None]
    assert not loose, f"modules outside the stages {STAGES}: {loose}"
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text()))
        assert doc and len(doc.splitlines()) <= 2, f"{stage}/__init__.py must say in two lines what it holds"


def test_imports_never_point_to_a_later_stage():
    upward = []
    for module, imported in _graph().items():
        own = _stage(module)
        for target in imported:
            theirs = _stage(target)
            if own and theirs and STAGES.index(theirs) > STAGES.index(own):
                upward.append(f"{module} imports {target} ({own} -> {theirs})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_circles():
    graph = _graph()
    state: dict[str, int] = {}
    circles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(circles)


def test_the_checks_catch_an_upward_import_and_a_circle(tmp_path, monkeypatch):
    fake = tmp_path / "perfstudy"
    for stage in STAGES:
        (fake / stage).mkdir(parents=True)
        (fake / stage / "__init__.py").write_text('"""A stage."""\n')
    (fake / "__init__.py").write_text("")
    (fake / "data" / "a.py").write_text("from perfstudy.present import b\n")
    (fake / "present" / "b.py").write_text("from perfstudy.data.a import x\n")
    monkeypatch.setattr("test_layout.PACKAGE", fake)
    graph = _graph()
    assert graph["perfstudy.data.a"] == {"perfstudy.present.b"}
    with pytest.raises(AssertionError, match=r"perfstudy\.data\.a imports perfstudy\.present\.b \(data -> present\)"):
        test_imports_never_point_to_a_later_stage()
    with pytest.raises(AssertionError, match=r"perfstudy\.data\.a -> perfstudy\.present\.b -> perfstudy\.data\.a"):
        test_no_import_circles()
