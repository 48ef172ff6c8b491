"""Packages that load their names on first use, and what the command line imports to start.

Each lazy package maps its public names to their modules; importing it, or
one of its modules, must not import the rest. ``harness --help`` reads every
command's help and every channel plugin, and must not pay for what the
commands run with (the runner, pydantic's models, Redis's and HTTP clients,
the HTML templates, the event loop): each command imports that when it runs.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.lazy import lazy_names

ROOT = Path(__file__).resolve().parents[2]
# The lazy packages; harness itself is checked in test_facade.py.
FACADES = ("channels", "channels.whatsapp", "harness.endpoints", "harness.report", "harness.suites")
# What running a command pays for, and `harness --help` must not.
HEAVY = (
    "anthropic",
    "asyncio",
    "channels.whatsapp.simulator",
    "harness.report.html",
    "harness.suites.runner",
    "httpx",
    "jinja2",
    "pydantic",
    "redis",
    "rich",
    "ssl",
    "starlette",
    "uvicorn",
    "yaml",
)


def _loaded_after(code: str) -> list[str]:
    """The modules a new interpreter holds after running ``code`` (its output discarded)."""
    script = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def _heavy(modules: list[str]) -> list[str]:
    return sorted({h for m in modules for h in HEAVY if m == h or m.startswith(h + ".")})


def _harness(*args: str) -> list[str]:
    """The modules loaded by running ``harness args``."""
    return _loaded_after(
        f"from harness.cli.main import main\ntry: main({list(args)!r})\nexcept SystemExit: pass"
    )


def _owners(package: str) -> dict[str, str]:
    owners: dict[str, str] = importlib.import_module(package)._OWNERS
    return owners


@pytest.mark.parametrize("package", FACADES)
def test_each_name_is_its_owners_object_and_the_map_is_the_all(package: str) -> None:
    module = importlib.import_module(package)
    owners = _owners(package)
    assert module.__all__ == sorted(owners)
    for name, owner in owners.items():
        assert name in importlib.import_module(owner).__all__, (name, owner)
        assert getattr(module, name) is getattr(importlib.import_module(owner), name), name


@pytest.mark.parametrize("package", FACADES)
def test_type_checkers_see_the_same_names(package: str) -> None:
    init = Path(importlib.import_module(package).__file__ or "")
    tree = ast.parse(init.read_text(encoding="utf-8"))
    [block] = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    seen: dict[str, str] = {}
    for stmt in block.body:
        assert isinstance(stmt, ast.ImportFrom)
        assert stmt.module is not None
        names = [alias.name for alias in stmt.names]
        if names == ["*"]:
            names = list(importlib.import_module(stmt.module).__all__)
        seen.update(dict.fromkeys(names, stmt.module))
    assert seen == _owners(package)


@pytest.mark.parametrize("package", FACADES)
def test_importing_the_package_imports_none_of_its_modules(package: str) -> None:
    # Save a module holding a name of its own (channels.direct_plugin: direct_plugin).
    named_alike = {f"{package}.{name}" for name in _owners(package)}
    loaded = _loaded_after(f"import {package}")
    assert not [m for m in loaded if m.startswith(package + ".") and m not in named_alike]


def test_a_name_that_is_its_modules_name_stays_the_name() -> None:
    # Importing harness.suites.registry binds the module in the package; the name wins.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, sys\n"
            "importlib.import_module('harness.suites.registry')\n"
            "import harness.suites\n"
            "print(harness.suites.registry is sys.modules['harness.suites.registry'].registry)",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.stdout == "True\n"


def test_an_unknown_name_is_an_attribute_error() -> None:
    import channels.whatsapp

    with pytest.raises(
        AttributeError, match=r"module 'channels\.whatsapp' has no attribute 'Nope'"
    ):
        _ = channels.whatsapp.Nope  # type: ignore[attr-defined]  # the typo is the point


def test_a_name_is_loaded_once_and_then_read_plainly() -> None:
    namespace = type(sys)("fake_lazy_package")
    sys.modules["fake_lazy_package"] = namespace
    try:
        load, listing = lazy_names("fake_lazy_package", {"dumps": "json"})
        assert "dumps" not in vars(namespace)
        assert load("dumps") is json.dumps
        assert vars(namespace)["dumps"] is json.dumps
        assert "dumps" in listing()
    finally:
        del sys.modules["fake_lazy_package"]


def test_help_reads_every_command_without_importing_what_they_run_with() -> None:
    loaded = _loaded_after(
        "from harness.cli.main import main\ntry: main(['--help'])\nexcept SystemExit: pass"
    )
    assert "channels.whatsapp.cli" in loaded  # the plugin's commands were listed
    assert _heavy(loaded) == []


# Each command and the module that declares it. `serve --help` shows the simulator's
# defaults, read without its settings model.
COMMAND_MODULES = {
    "diff": "harness.cli.diff",
    "load": "channels.whatsapp.load_cli",
    "proxy": "channels.whatsapp.proxy_cli",
    "record": "harness.cli.record",
    "regress": "harness.cli.regress",
    "replay": "harness.cli.replay",
    "run": "harness.cli.run",
    "serve": "channels.whatsapp.cli",
    "worker": "harness.cli.worker",
}


@pytest.mark.parametrize(("command", "module"), sorted(COMMAND_MODULES.items()))
def test_a_commands_help_imports_only_its_declaration(command: str, module: str) -> None:
    loaded = _harness(command, "--help")
    assert module in loaded
    assert _heavy(loaded) == []


def test_a_command_imports_what_it_uses_and_no_more() -> None:
    loaded = _loaded_after(
        "from harness.cli.main import main\ntry: main(['schema'])\nexcept SystemExit: pass"
    )
    assert "harness.suites.scenario" in loaded
    assert _heavy(loaded) == ["pydantic", "yaml"]
