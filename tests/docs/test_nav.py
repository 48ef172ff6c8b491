"""Every page of the docs site is reachable from its navigation.

``mkdocs build --strict`` refuses a page left out of the nav; this finds it
in the test run too, with the page's name, before CI's docs build does.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages() -> set[str]:
    config = (ROOT / "mkdocs.yml").read_text()
    nav = config[config.index("\nnav:") :]
    return set(re.findall(r"([\w./-]+\.md)\s*$", nav, flags=re.MULTILINE))


def test_every_page_is_in_the_nav() -> None:
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    missing = sorted(pages - _nav_pages())
    assert not missing, f"mkdocs.yml: add these pages to nav: {missing}"


def test_the_nav_names_only_pages_that_exist() -> None:
    gone = sorted(p for p in _nav_pages() if not (DOCS / p).is_file())
    assert not gone, f"mkdocs.yml: nav names pages that do not exist: {gone}"
