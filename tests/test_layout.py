"""The shape of the code base: import direction and curated public names."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import inspect
import pkgutil
import re
import sys
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "channels", "agents")

# package -> top-level packages it must never import
FORBIDDEN = {
    "harness": {"channels", "agents"},
    "agents": {"channels"},
}

# Inside harness: the core is the package's top-level modules; each feature is a
# subpackage that may use the core and the features ranked below it, never those above.
FEATURES = {"suites": 1, "replay": 2, "report": 3, "pytest_plugin": 4, "ui": 5, "cli": 6}
# The package's own facade and entry point gather everything.
FACADES = {"harness", "harness.__main__"}


def _imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known_modules() -> set[str]:
    return {_module_name(path) for package in PACKAGES for path in _modules(package)}


def _imported_modules(path: Path, known: set[str]) -> set[str]:
    """The project's modules a file imports, anywhere in it (``TYPE_CHECKING`` blocks too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in known:
                    found.add(submodule)
                elif node.module in known:
                    found.add(node.module)
    return found


def _import_graph() -> dict[str, set[str]]:
    known = _known_modules()
    return {
        _module_name(path): _imported_modules(path, known)
        for package in PACKAGES
        for path in _modules(package)
    }


def _layer(module: str) -> int | None:
    """0 for the core, a feature's rank, None for the facades and other packages."""
    if module in FACADES or not module.startswith("harness."):
        return None
    parts = module.split(".")
    return FEATURES.get(parts[1], 0) if len(parts) > 2 or parts[1] in FEATURES else 0


def _layer_violations(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for module, imported in sorted(graph.items()):
        mine = _layer(module)
        for other in sorted(imported):
            theirs = _layer(other)
            if other == "harness" and module not in FACADES:
                problems.append(f"{module} imports the facade harness")
            elif other.startswith("harness.cli") and not (
                module.startswith("harness.cli") or module in FACADES
            ):
                problems.append(f"{module} imports the command line ({other})")
            elif mine is not None and theirs is not None and theirs > mine:
                problems.append(f"{module} (layer {mine}) imports {other} (layer {theirs})")
    return problems


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_direction(package: str) -> None:
    offenders = []
    for path in _modules(package):
        bad = _imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_harness_features_use_the_core_and_nothing_uses_the_cli() -> None:
    assert _layer_violations(_import_graph()) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert _cycles(_import_graph()) == []


def test_the_layer_and_cycle_checks_see_violations() -> None:
    graph = {
        "harness.trace": {"harness.suites.runner"},
        "harness.suites.runner": {"harness.trace", "harness.report.html"},
        "harness.report.html": {"harness.cli.run"},
        "harness.fixture": {"harness"},
        "harness": {"harness.fixture"},
        "channels.whatsapp.proxy": {"harness.cli.main"},
    }
    assert _layer_violations(graph) == [
        "channels.whatsapp.proxy imports the command line (harness.cli.main)",
        "harness.fixture imports the facade harness",
        "harness.report.html imports the command line (harness.cli.run)",
        "harness.suites.runner (layer 1) imports harness.report.html (layer 3)",
        "harness.trace (layer 0) imports harness.suites.runner (layer 1)",
    ]
    assert sorted(_cycles(graph)) == [
        ["harness", "harness.fixture"],
        ["harness.suites.runner", "harness.trace"],
    ]


def test_import_checker_sees_violations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import channels.whatsapp\nfrom agents.booking import x\n"
        "import importlib\nimportlib.import_module('channels.direct')\n"
    )
    assert _imported_top_levels(bad) >= {"channels", "agents"}


def test_only_llm_module_imports_anthropic() -> None:
    importers = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in _modules(package)
        if "anthropic" in _imported_top_levels(path)
    ]
    assert importers in ([], ["harness/llm.py"])


def _all_modules(package: str) -> list[str]:
    pkg = importlib.import_module(package)
    found = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
        found.append(info.name)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_public_names_are_exported_and_documented(package: str) -> None:
    problems = []
    for name in _all_modules(package):
        module = importlib.import_module(name)
        if not module.__doc__:
            problems.append(f"{name}: no module docstring")
        exported = getattr(module, "__all__", None)
        if exported is None:
            problems.append(f"{name}: no __all__")
            continue
        # ruff's RUF022 keeps each __all__ sorted
        for public in exported:
            if not hasattr(module, public):
                problems.append(f"{name}.{public}: in __all__ but not defined")
                continue
            obj = getattr(module, public)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj):
                problems.append(f"{name}.{public}: no docstring")
        # every public class or function defined here is exported
        for attr, obj in vars(module).items():
            if attr.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if getattr(obj, "__module__", None) == name and attr not in exported:
                problems.append(f"{name}.{attr}: public but missing from __all__")
    assert problems == []


# modules whose names are reached through their module, not re-exported by the package
NOT_RE_EXPORTED = {
    "harness.cli.cache",
    "harness.cli.main",
    "harness.cli.logs",
    "harness.__main__",
    "harness.cli.run",
    "harness.cli.worker",
    "harness.pytest_plugin.plugin",
    "harness.cli.schema",
    "harness.cli.judging",
    "harness.cli.record",
    "harness.cli.regress",
    "harness.cli.replay",
    "harness.cli.replaying",
    "harness.cli.diff",
    "harness.cli.explore",
    "harness.cli.ui",
    "harness.cli.diffing",
    "channels.whatsapp.cli",
}


def test_packages_re_export_their_modules_public_names() -> None:
    problems = []
    for package in PACKAGES:
        for name in _all_modules(package):
            module = importlib.import_module(name)
            if not hasattr(module, "__path__"):
                continue
            exported = set(getattr(module, "__all__", []))
            for info in pkgutil.iter_modules(module.__path__, prefix=f"{name}."):
                short = info.name.rsplit(".", 1)[1]
                if info.ispkg or short.startswith("_") or info.name in NOT_RE_EXPORTED:
                    continue
                child = importlib.import_module(info.name)
                missing = sorted(set(getattr(child, "__all__", [])) - exported)
                if missing:
                    problems.append(f"{name}.__all__ lacks {info.name}: {missing}")
    assert problems == []


def test_every_package_is_typed() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file(), package


# -- dependencies: declared where imported, imported where declared ------------------------

# Trees whose third-party imports must be declared: the installed package needs
# [project] dependencies; tests and benchmarks may also use the dev extra. The pytest
# plugin runs inside pytest: it may also use the `pytest` extra.
RUNTIME_TREES = ("harness", "channels", "agents")
DEV_TREES = ("tests", "benchmarks", "reliability", "scripts")
PLUGIN_TREE = ROOT / "harness" / "pytest_plugin"
# mkdocs_hooks.py: the documentation site's build hooks, beside mkdocs.yml.
FIRST_PARTY = {*PACKAGES, *DEV_TREES, "mkdocs_hooks"}

# Distributions declared although no file imports them, and why.
NOT_IMPORTED = {
    "python-multipart": "starlette imports it to read multipart bodies (the media upload)",
    "httptools": "uvicorn parses HTTP with it when it is installed",
    "pytest-asyncio": "a pytest plugin, loaded through its entry point",
    "pytest-xdist": "a pytest plugin: -n spreads the tests over processes",
    "pytest-timeout": "a pytest plugin: a test that hangs fails after `timeout` seconds",
    "mypy": "a command: the type check",
    "ruff": "a command: lint and format",
    "types-protobuf": "type stubs for the protobuf classes the OTLP receiver reads",
}


def _distribution(requirement: str) -> str:
    """A requirement's distribution name, normalized (``types-PyYAML>=6`` -> ``types-pyyaml``)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert match is not None, requirement
    return _normalized(match.group())


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str = "dev") -> tuple[set[str], set[str]]:
    """The [project] dependencies and an extra (dev), as normalized distribution names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {_distribution(req) for req in project["dependencies"]}
    extras = {_distribution(req) for req in project["optional-dependencies"][extra]}
    return runtime, extras


def _third_party_imports(files: Collection[Path]) -> dict[str, set[str]]:
    """Top-level names that ``files`` import which are neither the stdlib nor ours."""
    found: dict[str, set[str]] = {}
    for path in files:
        where = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name)
        for name in _imported_top_levels(path):
            if name not in sys.stdlib_module_names and name not in FIRST_PARTY:
                found.setdefault(name, set()).add(where)
    return found


def _tree_files(trees: Collection[str]) -> list[Path]:
    return [path for tree in trees for path in _modules(tree)]


def _dependency_problems(
    imports: Mapping[str, Collection[str]],
    declared: Collection[str],
    distributions: Mapping[str, Collection[str]],
    *,
    must_be_imported: Collection[str] = (),
) -> list[str]:
    """Imports no declared distribution provides, and declared ones nothing imports.

    ``distributions`` maps an import name to the distributions that provide it
    (:func:`importlib.metadata.packages_distributions`); ``must_be_imported``
    lists the declared distributions that some file must import. A package's
    type stubs (``yaml-stubs``, from ``types-PyYAML``) count as imported
    wherever the package is.
    """
    problems = []
    used: set[str] = set()
    for name, files in sorted(imports.items()):
        providers = {_normalized(dist) for dist in distributions.get(name, ())}
        used |= providers | {_normalized(d) for d in distributions.get(f"{name}-stubs", ())}
        if not providers & set(declared):
            where = ", ".join(sorted(files))
            known = f" ({', '.join(sorted(providers))})" if providers else ""
            problems.append(f"{name}{known} is imported by {where} but not declared")
    for dist in sorted(set(must_be_imported) - used - set(NOT_IMPORTED)):
        problems.append(f"{dist} is declared but nothing imports it")
    return problems


def test_the_package_imports_what_it_declares_and_declares_what_it_imports() -> None:
    runtime, _dev = _declared()
    files = [p for p in _tree_files(RUNTIME_TREES) if not p.is_relative_to(PLUGIN_TREE)]
    problems = _dependency_problems(
        _third_party_imports(files),
        runtime,
        importlib.metadata.packages_distributions(),
        must_be_imported=runtime,
    )
    assert problems == []


def test_the_pytest_plugin_imports_only_the_package_and_the_pytest_extra() -> None:
    runtime, plugin = _declared("pytest")
    problems = _dependency_problems(
        _third_party_imports(sorted(PLUGIN_TREE.rglob("*.py"))),
        runtime | plugin,
        importlib.metadata.packages_distributions(),
    )
    assert problems == []


def test_tests_and_benchmarks_import_what_the_dev_extra_declares() -> None:
    runtime, dev = _declared()
    problems = _dependency_problems(
        _third_party_imports(_tree_files(DEV_TREES)),
        runtime | dev,
        importlib.metadata.packages_distributions(),
        must_be_imported=dev,
    )
    assert problems == []


def test_the_dependency_check_sees_undeclared_and_unused_distributions(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "import json\nimport made_up_parser\nfrom nowhere_at_all import x\n"
        "from used_lib.sub import y\nfrom harness import z\n"
    )
    imports = _third_party_imports([module])
    assert set(imports) == {"made_up_parser", "nowhere_at_all", "used_lib"}
    distributions = {
        "made_up_parser": ["Made_Up.Parser"],
        "used_lib": ["used-dist"],
        "used_lib-stubs": ["types-used-dist"],
    }
    declared = {"used-dist", "types-used-dist", "unused-dist", "ruff"}
    assert _dependency_problems(imports, declared, distributions, must_be_imported=declared) == [
        "made_up_parser (made-up-parser) is imported by module.py but not declared",
        "nowhere_at_all is imported by module.py but not declared",
        "unused-dist is declared but nothing imports it",
    ]
    imports.pop("nowhere_at_all")
    declared = {"used-dist", "types-used-dist", "made-up-parser", "ruff"}
    assert _dependency_problems(imports, declared, distributions, must_be_imported=declared) == []


def test_the_license_is_an_spdx_expression_setuptools_builds() -> None:
    """setuptools stops building the table form (``license = {text = ...}``) after 2027-02-18."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    # The expression form needs setuptools 77 or later (PEP 639).
    [setuptools] = [r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == "setuptools>=77"
