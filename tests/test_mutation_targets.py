"""Every mutation of the mutation check still applies to the code it names.

CI runs only the quick subset of ``reliability/mutations.py``; a mutation
whose text no longer matches its file would go unnoticed until someone ran
the whole list. This check is cheap: it reads the files, it runs no tests.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _mutations_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reliability_mutations", ROOT / "reliability" / "mutations.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUTATIONS = _mutations_module().MUTATIONS


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_finds_its_text_once(mutation: Any) -> None:
    source = (ROOT / mutation.path).read_text()
    assert source.count(mutation.before) == 1, (
        f"{mutation.path}: the text of {mutation.name!r} is found "
        f"{source.count(mutation.before)} times; update reliability/mutations.py"
    )
    assert mutation.after != mutation.before


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_names_tests_that_exist(mutation: Any) -> None:
    missing = [t for t in mutation.tests if not (ROOT / t.split("::")[0]).is_file()]
    assert not missing, f"{mutation.name!r} names tests that are gone: {missing}"


def test_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))
