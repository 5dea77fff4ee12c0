"""The layout's invariants: no import circles among the project's modules (the package, the
benchmarks, the papers' reproductions and the tools), imports inside functions only for the heavy
optional dependencies (CuPy, matplotlib, numba, dask, ...), each with a comment on its line or the line
before saying why, and no tool taking anything from tests/."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("expansions", "bench", "paper_repro", "tools")
#: Optional or heavy third-party modules that may be imported inside a function.
LAZY_ALLOWED = ("cupy", "cupyx", "matplotlib", "numba", "dask", "distributed", "tqdm", "flint", "gmpy2",
                "xprec", "pytest", "tempfile", "subprocess")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules():
    return {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def _imports(name: str, path: Path, modules):
    """(imported module, line, inside a function) for every import statement of a module: for
    ``from package import name`` the submodule when ``name`` is one, else the package."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    funcs = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in dict.fromkeys(targets):
            yield t, node.lineno, id(node) in funcs


def _graph():
    mods = _modules()
    graph = {m: set() for m in mods}
    lazy = []
    for m, path in mods.items():
        lines = path.read_text().splitlines()
        for t, line, inside in _imports(m, path, mods):
            if t in mods and t != m:
                graph[m].add(t)
            root = t.split(".")[0]
            if inside and (root in PACKAGES or root not in LAZY_ALLOWED):
                lazy.append(f"{path.relative_to(ROOT)}:{line}: import of {t} inside a function")
            elif inside and "#" not in "".join(lines[line - 2:line]):
                lazy.append(f"{path.relative_to(ROOT)}:{line}: import of {t} inside a function without a comment "
                            "saying why")
    return graph, lazy


def test_no_import_circles():
    graph, _ = _graph()
    cycles, state = [], {}

    def visit(m, stack):
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import circles:\n" + "\n".join(cycles)


def test_imports_inside_functions_only_for_optional_dependencies():
    _, lazy = _graph()
    assert not lazy, "\n".join(lazy)


def test_tools_take_nothing_from_the_tests():
    """The tools (the GPU runbook) import the package and each other, never a module of tests/, nor put
    tests/ on the path: what the tests and the runbook share lives in the package (the input families:
    expansions.testing)."""
    mods = _modules()
    of_tests = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"tests"}
    bad = [f"{path.relative_to(ROOT)}:{line}: import of {t}" for m, path in mods.items() if m.split(".")[0] == "tools"
           for t, line, _ in _imports(m, path, mods) if t.split(".")[0] in of_tests]
    bad += [f"{path.relative_to(ROOT)}: tests/ on sys.path" for m, path in mods.items() if m.split(".")[0] == "tools"
            and re.search(r"sys\.path\.\w+\(.*tests", path.read_text())]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", ["expansions.arraytype", "expansions.operations", "expansions.convert",
                                  "expansions.text", "expansions.promote", "expansions.numpy_protocol",
                                  "expansions.creation", "expansions.dispatch", "expansions.backends"])
def test_modules_stay_small(name):
    """The public side is split by concern, each module readable in one sitting."""
    assert len(_modules()[name].read_text().splitlines()) <= 540


def test_one_table_for_kernels_launchers_twins_and_backends():
    """Every kernel of build.OPERATIONS names its twin; its launcher is generated with the twin's
    number of arguments (and the keyword ``renormalize`` where the kernel has a renormalizing
    instance); the backends' functions of that name are the twin (cpu) and the launcher (cuda)."""
    import importlib
    import inspect

    from expansions import backends
    from expansions.cuda import build, launch

    for name, op in build.OPERATIONS.items():
        module, _, fn = f"expansions.{op.twin}".rpartition(".")
        twin = getattr(importlib.import_module(module), fn)
        assert callable(twin) and op.doc, name
        if op.params == "RC":
            continue
        launcher = launch.LAUNCHERS[name]
        assert getattr(launch, name) is launcher and twin.__qualname__ in launcher.__doc__
        params = [p for p in inspect.signature(twin).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        lparams = inspect.signature(launcher).parameters.values()
        assert len(params) == len([p for p in lparams if p.kind is p.POSITIONAL_OR_KEYWORD]), name
        # the renormalizing instance (one launch per operation) is the keyword renormalize
        assert [p.name for p in lparams if p.kind is p.KEYWORD_ONLY] == (["renormalize"] if op.renormalizes else [])
        if hasattr(backends.cpu, name):
            assert getattr(backends.cpu, name) is twin and getattr(backends.cuda, name) is launcher, name


@pytest.mark.parametrize("cpu", ["twins", "engine"])
@pytest.mark.parametrize("R", [2, 3])
def test_x_plus_y_reaches_the_backend_in_three_calls(R, cpu):
    """``x + y`` -> ``ExpansionArray.__add__`` -> ``operations.binary`` -> the backend's kernel."""
    import sys

    import expansions as ex
    from expansions import backends, dispatch, engine

    if cpu == "engine" and not engine.available():
        pytest.skip(engine.unavailable_reason())
    x, y = ex.random(4, terms=R, seed=1), ex.random(4, terms=R, seed=2)
    be = backends.set_cpu_backend(cpu)
    kernel = be.add_safe if R > 2 else be.dw_binary
    if R == 2 and be.dw_direct is not None:  # the engine: the direct entry to its double-word loop
        kernel = be.dw_direct(dispatch.method("add", "auto", 2))
    here, depth = sys._getframe().f_code, []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is kernel.__code__ and not depth:
            f, d = frame, 0
            while f is not None and f.f_code is not here:
                f, d = f.f_back, d + 1
            depth.append(d)

    sys.setprofile(profile)
    try:
        x + y
    finally:
        sys.setprofile(None)
        backends.set_cpu_backend(None)
    assert depth == [3]
