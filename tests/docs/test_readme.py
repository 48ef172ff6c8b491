"""The README stays short, and keeps the two set-up commands that CI and newcomers run."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DEMO = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . "
    "&& harness run --report-dir reports"
)
TESTS = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && pytest'


def test_the_readme_is_under_120_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 120


def test_ci_finds_the_test_command_in_the_readme_as_it_always_was() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    awk = re.search(r"test_command=\$\((awk .*? README\.md)\)", ci)
    assert awk is not None, ".ci/run no longer reads the test command from the README"
    found = subprocess.run(
        ["bash", "-c", awk.group(1)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert found.stdout == TESTS + "\n"


def test_the_demo_command_follows_its_marker() -> None:
    text = README.read_text(encoding="utf-8")
    assert f"<!-- demo-command -->\n```sh\n{DEMO}\n```\n" in text


def test_the_readme_links_into_the_docs_and_every_link_resolves() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", text)
    assert len(links) >= 15
    for link in links:
        assert (ROOT / link).exists(), link
