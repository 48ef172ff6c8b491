"""The shape of the code base: import direction and curated public names."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "channels", "agents")

# package -> top-level packages it must never import
FORBIDDEN = {
    "harness": {"channels", "agents"},
    "agents": {"channels"},
}


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


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_import_direction(package: str) -> None:
    offenders = []
    for path in _modules(package):
        bad = _imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


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
    "harness.cli",
    "harness.__main__",
    "harness.run_cli",
    "harness.scenario_cli",
    "harness.replay_cli",
    "harness.diff_cli",
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
