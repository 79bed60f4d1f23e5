"""The package's layering: every module of `kafka_mc` imports on its own, no modules import each
other in a cycle (imports inside functions count: deferring an import hides a cycle, it does not
remove it), and no module imports another module's private (`_name`) names.

The modules are read from the folders `pyproject.toml` maps (`kafka_mc.model -> model/`, ...):
`pkgutil` lists each package's folder (without importing anything), since walking
`kafka_mc.__path__` alone finds only the modules of `kafka_mc/` itself.
"""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
PACKAGE = "kafka_mc"

# Cycles allowed for now, each as the set of modules in it, with the reason. Empty: there are none.
ALLOWED_CYCLES: set[frozenset[str]] = set()
# Private names allowed for now, as (importing module, imported module, name), with the reason. Empty: none.
ALLOWED_PRIVATE_IMPORTS: set[tuple[str, str, str]] = set()
# Not imported on their own: running `kafka_mc.__main__` runs the CLI (test_cli tests that entry point).
NOT_IMPORTED_ALONE = {f"{PACKAGE}.__main__"}


def package_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package by name: its source file, and whether it is a package."""
    folders = SETUPTOOLS["package-dir"]
    modules: dict[str, tuple[Path, bool]] = {}
    for package in SETUPTOOLS["packages"]:
        folder = ROOT / folders[package]
        modules[package] = (folder / "__init__.py", True)
        for info in pkgutil.iter_modules([str(folder)], f"{package}."):
            if not info.ispkg:
                modules[info.name] = (folder / f"{info.name.rpartition('.')[2]}.py", False)
    return modules


MODULES = package_modules()


def test_every_subpackage_is_listed_in_pyproject():
    """A folder with an `__init__.py` under a package must be a package of its own in
    pyproject.toml, or it is not installed (and its modules are not checked here)."""
    listed = set(SETUPTOOLS["packages"])
    found = {info.name for package in listed
             for info in pkgutil.iter_modules([str(ROOT / SETUPTOOLS["package-dir"][package])], f"{package}.")
             if info.ispkg}
    assert found <= listed, f"not in pyproject.toml's packages: {sorted(found - listed)}"


# Third-party packages the parent of the import test loads before it forks a child per module: not
# kafka_mc's, so the test still sees every import among the package's own modules.
PRELOADED = ("numpy", "z3", "numba", "networkx", "hypothesis", "typer", "rich", "tabulate")
IMPORT_EACH = """
import importlib, json, os, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
assert not any(name.partition(".")[0] == "kafka_mc" for name in sys.modules), "the parent imported kafka_mc"
failed = {}
for name in json.loads(sys.argv[2]):
    read, write = os.pipe()
    if os.fork() == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            os._exit(0)
        except BaseException as error:
            os.write(write, f"{type(error).__name__}: {error}"[:4000].encode())
            os._exit(1)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    _, status = os.wait()
    if status:
        failed[name] = message or f"exit status {status}"
print(json.dumps(failed))
"""


def test_every_module_imports_on_its_own(tmp_path):
    """Each module in a fresh process, no module of kafka_mc imported before it: an import order that
    only works when something else was imported first (a cycle, a missing import) fails here. The
    process is forked from one that has loaded a few third-party packages (`PRELOADED`), which
    spares every child their import time."""
    names = sorted(set(MODULES) - NOT_IMPORTED_ALONE)
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH, json.dumps(PRELOADED), json.dumps(names)],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert not failed, f"modules that do not import on their own: {failed}"


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(name: str) -> list[tuple[str, str | None, int]]:
    """Every import in the module, at module level or in a function, outside `if TYPE_CHECKING:`:
    (the module imported from, the name imported or None for `import module`, line)."""
    path, is_package = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    typing_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking_only(node)
                   for inner in ast.walk(node)}
    here = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            found += [(source, alias.name, node.lineno) for alias in node.names]
    return found


def _known(dotted: str) -> str | None:
    """The package module `dotted` is, or is in (`kafka_mc.cli.main` -> `kafka_mc.cli`)."""
    while dotted and dotted not in MODULES:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def import_graph() -> nx.DiGraph:
    """Module -> the package modules it imports. A package's `__init__` importing its own
    submodules is how a package is made, not a cycle: those edges are left out."""
    graph = nx.DiGraph()
    graph.add_nodes_from(MODULES)
    for name in MODULES:
        for source, imported, _ in _imports(name):
            for target in {_known(source), _known(f"{source}.{imported}") if imported else None}:
                if target is not None and target != name and not target.startswith(f"{name}."):
                    graph.add_edge(name, target)
    return graph


def test_no_import_cycles():
    graph = import_graph()
    cycles = {frozenset(component) for component in nx.strongly_connected_components(graph) if len(component) > 1}
    unexpected = cycles - ALLOWED_CYCLES
    shown = []
    for cycle in unexpected:
        edges = nx.find_cycle(graph.subgraph(cycle))
        shown.append(" -> ".join([*(edge[0] for edge in edges), edges[0][0]]) + f" (and all of {sorted(cycle)})")
    assert not unexpected, "import cycles:\n" + "\n".join(shown)
    assert not ALLOWED_CYCLES - cycles, "an allowed cycle is gone: take it off ALLOWED_CYCLES"


def test_no_module_imports_another_modules_private_names():
    found = set()
    where = {}
    for name in MODULES:
        for source, imported, line in _imports(name):
            module = _known(source)
            if module is None or module == name:
                continue
            names = [imported] if imported else source[len(module):].split(".")
            private = [part for part in names if part.startswith("_") and not part.startswith("__")]
            for part in private:
                found.add((name, module, part))
                where[(name, module, part)] = f"{MODULES[name][0].relative_to(ROOT)}:{line}"
    unexpected = found - ALLOWED_PRIVATE_IMPORTS
    assert not unexpected, "private names imported from another module:\n" + "\n".join(
        f"{where[entry]}: {entry[0]} imports {entry[2]} from {entry[1]}" for entry in sorted(unexpected))
    assert not ALLOWED_PRIVATE_IMPORTS - found, "an allowed private import is gone: take it off the list"


@pytest.mark.parametrize("module", ["kafka_mc.cli_common", "kafka_mc.cli_control", "kafka_mc.cli_prove",
                                    "kafka_mc.cli_simulate", "kafka_mc.cli_spark"])
def test_command_modules_do_not_import_the_app(module):
    """`kafka_mc.cli` holds the app and registers the commands of the other CLI modules; they
    import what they share from `kafka_mc.cli_common`, never from `kafka_mc.cli`."""
    assert "kafka_mc.cli" not in set(import_graph().successors(module))


# The layers, lowest first (ARCHITECTURE.md): a module may import from its own layer and the ones
# below it. `kafka_mc.testing` (the conformance harness) sits on the model and its properties so
# that encodings in `checker/` can use it; what is left of `kafka_mc/` is the top: the CLI, the main
# job, the pytest plugin.
LAYERS = ("kafka_mc.model", "kafka_mc.properties", "kafka_mc.testing", "kafka_mc.control", "kafka_mc.checker",
          "kafka_mc.counterexamples", "kafka_mc")
# Imports that go up a layer, as (importing module, imported module), with the reason. Empty: none.
ALLOWED_UPWARD: set[tuple[str, str]] = set()


def layer_of(module: str) -> int:
    return next(index for index, prefix in enumerate(LAYERS) if module == prefix or module.startswith(f"{prefix}."))


def test_layers_import_downwards_only():
    graph = import_graph()
    upward = {(source, target) for source, target in graph.edges if layer_of(target) > layer_of(source)}
    assert not upward - ALLOWED_UPWARD, "imports that go up a layer:\n" + "\n".join(
        f"{source} ({LAYERS[layer_of(source)]}) imports {target} ({LAYERS[layer_of(target)]})"
        for source, target in sorted(upward - ALLOWED_UPWARD))
    assert not ALLOWED_UPWARD - upward, "an allowed upward import is gone: take it off ALLOWED_UPWARD"
