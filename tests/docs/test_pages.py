"""Every page of the documentation runs as written: its commands, its files, its fragments.

Pages are discovered (every ``*.md`` under ``docs/``, and the README), so a new
page is tested without being listed here. Each page runs in a session of its
own (:mod:`tests.docs.session`): from a copy of the project's root, in the
project's virtual environment, offline, with no API key.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.docs.pages import Block, Page, documentation_pages, read_page
from tests.docs.session import Session

PAGES = documentation_pages()
FIRST_PARTY = ("harness", "channels", "agents")


def _page(name: str) -> Page:
    return read_page(PAGES[name].read_text(encoding="utf-8"), name)


def _runnable(page: Page) -> list[Block]:
    return [b for b in page.blocks if (b.is_shell and b.skip is None) or b.file is not None]


def _with_the_pages_before(name: str) -> list[Page]:
    """The page, after the pages it goes on from (``after``), first one first."""
    chain = [_page(name)]
    while chain[0].after is not None:
        before = chain[0].after
        assert before in PAGES, f"{name}: 'after {before}' names no page under docs/"
        assert before not in [p.name for p in chain], f"{name}: pages go on from each other"
        chain.insert(0, _page(before))
    return chain


RUNNABLE = [n for n in PAGES if any(b.is_shell and b.skip is None for b in _page(n).blocks)]


def test_the_docs_have_pages_and_most_shell_blocks_run() -> None:
    shell = [b for name in PAGES for b in _page(name).blocks if b.is_shell]
    skipped = [b for b in shell if b.skip is not None]
    assert len(PAGES) > 10
    # Left out only what needs a server in another terminal, Meta, or the project's own set-up.
    assert len(skipped) * 3 < len(shell), [b.where for b in skipped]
    assert all(b.skip for b in skipped)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_the_page_runs_as_written(name: str, tmp_path: Path) -> None:
    session = Session.open(tmp_path)
    for page in _with_the_pages_before(name):
        for block in _runnable(page):
            session.run(block)


def _imported_names(tree: ast.AST) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
    return found


@pytest.mark.parametrize("name", list(PAGES))
def test_the_python_of_the_page_compiles_and_imports_what_exists(name: str) -> None:
    for block in _page(name).blocks:
        if block.language != "python":
            continue
        try:
            tree = ast.parse(block.text, filename=block.where)
            compile(tree, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError as exc:
            pytest.fail(f"{block.where}: {exc}")
        for module, attribute in _imported_names(tree):
            if module.split(".")[0] not in FIRST_PARTY:
                continue
            imported = importlib.import_module(module)
            assert attribute is None or hasattr(imported, attribute), (
                f"{block.where}: {module} has no {attribute}"
            )


def test_every_page_links_only_to_pages_that_exist() -> None:
    """Relative links between pages; ``mkdocs build --strict`` checks them too, with anchors."""
    for name, path in PAGES.items():
        if name == "README.md":
            continue
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", text):
            assert (path.parent / target).resolve().is_file(), f"{name}: {target}"


def test_the_own_bot_tutorial_says_how_the_bots_tool_calls_reach_the_harness() -> None:
    """What the bot must do names the registry its tools go through, and what a run says without."""
    from harness.suites.invariants import unobserved

    text = PAGES["tutorials/own-bot.md"].read_text(encoding="utf-8")
    section = text.partition("## What the bot must do")[2].partition("\n## ")[0]
    for shown in ("harness.recording.wrap_tools(env)", "tools = wrap_tools(env)", "tools.call("):
        assert shown in section, f"tutorials/own-bot.md, What the bot must do: no {shown!r}"
    said = re.search(r'reports "(can\'t be checked: [^"]+)"', section.replace("\n", " "))
    assert said is not None, "tutorials/own-bot.md: what a run says without the registry"
    assert unobserved("rule", "tool").message.startswith(said.group(1))
