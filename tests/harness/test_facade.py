"""The ``harness`` facade: every public name, loaded on first use, seen whole by type checkers."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness import _OWNERS
from harness.version import VERSION

INIT = Path(harness.__file__)


def _type_checking_imports() -> list[ast.ImportFrom]:
    """The imports inside the facade's ``if TYPE_CHECKING:`` block."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            assert all(isinstance(stmt, ast.ImportFrom) for stmt in node.body)
            return [stmt for stmt in node.body if isinstance(stmt, ast.ImportFrom)]
    raise AssertionError("harness/__init__.py has no `if TYPE_CHECKING:` block")


def _fresh_interpreter(code: str) -> object:
    """What ``code`` prints as JSON, run in a new interpreter (nothing imported yet)."""
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    return json.loads(done.stdout)


def test_the_map_gives_each_owning_module_its_whole_all() -> None:
    problems = []
    for module in sorted(set(_OWNERS.values())):
        mapped = {name for name, owner in _OWNERS.items() if owner == module}
        exported = set(importlib.import_module(module).__all__)
        if missing := sorted(exported - mapped):
            problems.append(f"{module}: {missing} not in the map")
        if extra := sorted(mapped - exported):
            problems.append(f"{module}: {extra} in the map but not in its __all__")
    assert problems == []


def test_type_checkers_see_every_module_of_the_map_and_nothing_else() -> None:
    imports = _type_checking_imports()
    assert [[alias.name for alias in stmt.names] for stmt in imports] == [["*"]] * len(imports)
    assert sorted(stmt.module or "" for stmt in imports) == sorted(set(_OWNERS.values()))


def test_all_and_dir_hold_every_public_name_and_the_version() -> None:
    assert harness.__all__ == sorted([*_OWNERS, "__version__"])
    assert set(harness.__all__) <= set(dir(harness))
    assert harness.__version__ == VERSION == "0.1.0"


def test_every_public_name_is_its_owners_object() -> None:
    for name, module in _OWNERS.items():
        assert getattr(harness, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error_and_an_import_error() -> None:
    with pytest.raises(AttributeError, match="module 'harness' has no attribute 'Conversatoin'"):
        _ = harness.Conversatoin  # type: ignore[attr-defined]  # the typo is the point
    with pytest.raises(ImportError, match="cannot import name 'Conversatoin'"):
        from harness import Conversatoin  # type: ignore[attr-defined]  # noqa: F401


def test_importing_harness_loads_no_module_until_a_name_is_used() -> None:
    loaded = _fresh_interpreter(
        "import json, sys\n"
        "def ours(): return sorted(m for m in sys.modules if m.split('.')[0] == 'harness')\n"
        "import harness\n"
        "bare = ours()\n"
        "from harness import VirtualClock\n"
        "print(json.dumps([bare, ours()]))\n"
    )
    assert isinstance(loaded, list)
    bare, after_clock = loaded
    assert bare == ["harness", "harness.lazy", "harness.version"]
    assert "harness.clock" in after_clock
    assert not any(m.startswith(("harness.suites", "harness.replay")) for m in after_clock)


def test_a_star_import_gives_every_public_name() -> None:
    names = _fresh_interpreter(
        "import json\nfrom harness import *\n"
        "print(json.dumps(sorted(n for n in dir() if not n.startswith('_') or n == '__version__')))"
    )
    assert names == sorted([*harness.__all__, "json"])
