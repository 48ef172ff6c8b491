"""The bots are third-party programs: they import nothing from this project.

The fake model server and the slow service may share the loopback helper, and
nothing else of ours.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BOTS = ["inline", "background", "debounce", "per_fragment", "pizza", "unreliable", "moderator"]
DOUBLES = ["fake_anthropic", "slow_service"]
THIRD_PARTY = {"httpx", "starlette", "uvicorn"}


def _imports(module: str) -> set[str]:
    """Every module ``module`` imports, by its full dotted name."""
    tree = ast.parse((HERE / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{module} uses a relative import"
            found.add(node.module or "")
    return found


def _foreign(imported: set[str]) -> set[str]:
    """What is neither the standard library nor httpx, starlette or uvicorn."""
    allowed = set(sys.stdlib_module_names) | THIRD_PARTY
    return {name for name in imported if name.split(".")[0] not in allowed}


@pytest.mark.parametrize("bot", BOTS)
def test_a_bot_imports_only_the_standard_library_httpx_starlette_and_uvicorn(bot: str) -> None:
    imported = _imports(bot)
    assert {"httpx", "uvicorn"} <= imported  # the check reads the real file
    assert _foreign(imported) == set()


@pytest.mark.parametrize("double", DOUBLES)
def test_a_service_double_imports_nothing_of_ours_but_the_loopback_helper(double: str) -> None:
    assert _foreign(_imports(double)) == {"tests.bots.loopback"}
    assert _foreign(_imports("loopback")) == set()


def test_the_check_sees_an_import_from_the_harness() -> None:
    assert _foreign({"json", "starlette.routing", "harness.trace", "channels"}) == {
        "harness.trace",
        "channels",
    }
