"""The reference pages keep up with the code: every variable read, every exit code used."""

from __future__ import annotations

import re
from pathlib import Path

from harness.cli.main import EXIT_DIVERGED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from harness.replay.judge import EXIT_BELOW_THRESHOLD, EXIT_NO_VERDICT

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
SOURCES = ("harness", "channels")


def _source_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for tree in SOURCES
        for path in sorted((ROOT / tree).rglob("*.py"))
    )


def test_every_variable_the_harness_reads_is_on_the_environment_page() -> None:
    source = _source_text()
    read = set(re.findall(r'envvar="([A-Z_]+)"', source))  # the commands' options
    read |= set(re.findall(r'"(HARNESS_[A-Z_]+)"', source))  # settings an agent is given
    assert {"HARNESS_CONTROL_TOKEN", "HARNESS_RECORD_MODE", "HARNESS_STORE_URL"} <= read
    page = (REFERENCE / "environment.md").read_text(encoding="utf-8")
    assert sorted(name for name in read if f"`{name}`" not in page) == []


def test_every_exit_code_is_on_the_exit_codes_page() -> None:
    page = (REFERENCE / "exit-codes.md").read_text(encoding="utf-8")
    codes = {int(c) for c in re.findall(r"^\| (\d) \|", page, re.M)}
    used = {EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DIVERGED, EXIT_BELOW_THRESHOLD, EXIT_NO_VERDICT}
    assert codes == used == {0, 1, 2, 3, 4}


def test_every_built_in_invariant_has_a_section_and_a_failing_example() -> None:
    from harness.suites import builtin_invariants, redelivery_invariants
    from harness.suites.registry import registry

    page = (REFERENCE / "invariants.md").read_text(encoding="utf-8")
    homes = {
        name: module.__name__
        for module in (builtin_invariants, redelivery_invariants)
        for name in module.__all__
    }
    names = {name for name in registry() if name in homes}
    assert len(names) == 9
    for name in names:
        assert f"## `{name}`" in page
        assert f"::: {homes[name]}.{name}" in page
        assert f"# invariant-examples/{name}.yaml" in page
        assert f'<!-- docs-test: prints "✗ {name} at turn' in page
