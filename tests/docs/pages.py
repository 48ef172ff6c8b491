"""The code blocks of the documentation, read as a reader runs them.

Every Markdown page under ``docs/`` and the README is split into its fenced
blocks, in order. What a block is for follows from its language and its first
line, so a page needs no markup to be tested:

- ``console``: each line that starts with ``$ `` is a command (a line ending in
  ``\\`` goes on to the next); the other lines are its output, not run;
- ``bash``, ``sh``, ``shell``: the whole block is a script;
- a block whose first line is ``# path/name.ext`` (``# mybot.py``,
  ``# scenarios/echo.yaml``) is a file the reader saves: it is written where the
  reader stands at that point of the page;
- ``python`` blocks that are not files are fragments: they must compile.

An HTML comment on the lines just before a block says more about it:
``<!-- docs-test: skip (why) -->`` leaves a shell block out, with the reason in
the page's source for everyone to see (a skip without a reason is an error);
``<!-- docs-test: exit N -->`` says the block ends with exit status N, and
``<!-- docs-test: prints "text" -->`` that its output contains the text. One
anywhere on a page, ``<!-- docs-test: after other/page.md -->``, runs that page
first in the same session (a tutorial that goes on from another).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "SHELL_LANGUAGES",
    "Block",
    "Page",
    "PageError",
    "commands_of",
    "documentation_pages",
    "read_page",
]

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = frozenset({"console", "bash", "sh", "shell"})

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+)(?P<lang>[\w+-]*)\s*$")
_COMMENT = re.compile(r"^\s*<!--(.*?)-->\s*$")
_MARKER = re.compile(r"^\s*docs-test:\s*(?P<what>.*?)\s*$")
_SKIP = re.compile(r"^skip\s*\((?P<reason>.+)\)$")
_EXIT = re.compile(r"^exit\s+(?P<code>\d+)$")
_PRINTS = re.compile(r'^prints\s+"(?P<text>[^"]+)"$')
_AFTER = re.compile(r"^after\s+(?P<page>[\w./-]+\.md)$")
_FILE = re.compile(r"^#\s+(?P<path>[\w-][\w./-]*\.\w+)\s*$")


class PageError(ValueError):
    """A page whose test markers can't be read: the page and line are named."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    line: int  # of the opening fence, from 1
    language: str
    text: str
    skip: str | None = None  # the reason, when the page says to leave it out
    exit_code: int = 0
    prints: tuple[str, ...] = ()  # what its output must contain

    @property
    def file(self) -> str | None:
        """The path the block is saved to, when its first line names one."""
        first = self.text.split("\n", 1)[0]
        match = _FILE.match(first)
        return match.group("path") if match else None

    @property
    def is_shell(self) -> bool:
        return self.language in SHELL_LANGUAGES and self.file is None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class Page:
    """A page's blocks in order, and the page to run before it, if any."""

    name: str
    blocks: tuple[Block, ...]
    after: str | None = None
    markers: tuple[str, ...] = field(default=())


def commands_of(block: Block) -> str:
    """The script a shell block runs: a console block's ``$`` lines, or the whole block."""
    if block.language != "console":
        return block.text
    commands: list[str] = []
    going_on = False
    for line in block.text.splitlines():
        if going_on or line.startswith("$ "):
            command = line if going_on else line[2:]
            commands.append(command)
            going_on = command.rstrip().endswith("\\")
    return "\n".join(commands) + ("\n" if commands else "")


def read_page(text: str, name: str) -> Page:
    """Split a Markdown page into its blocks, with the markers before each."""
    lines = text.splitlines()
    blocks: list[Block] = []
    after: str | None = None
    markers: list[str] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = len(opening.group("indent")), opening.group("fence")
        body: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            body.append(lines[end][indent:] if lines[end][:indent].isspace() else lines[end])
            end += 1
        if end == len(lines):
            raise PageError(f"{name}:{index + 1}: a code block that is never closed")
        skip, exit_code, prints = None, 0, []
        before = index - 1
        while before >= 0 and (comment := _COMMENT.match(lines[before])) is not None:
            marker = _MARKER.match(comment.group(1))
            before -= 1
            if marker is None:
                continue  # another comment, such as the README's test-command marker
            what = marker.group("what")
            markers.append(what)
            if (skipped := _SKIP.match(what)) is not None:
                skip = skipped.group("reason").strip()
            elif (code := _EXIT.match(what)) is not None:
                exit_code = int(code.group("code"))
            elif (printed := _PRINTS.match(what)) is not None:
                prints.append(printed.group("text"))
            elif (first := _AFTER.match(what)) is not None:
                after = first.group("page")
            else:
                raise PageError(
                    f"{name}:{before + 2}: docs-test marker {what!r} is none of "
                    "'skip (reason)', 'exit N', 'prints \"text\"', 'after page.md'"
                )
        blocks.append(
            Block(
                page=name,
                line=index + 1,
                language=opening.group("lang"),
                text="\n".join(body) + "\n",
                skip=skip,
                exit_code=exit_code,
                prints=tuple(prints),
            )
        )
        index = end + 1
    return Page(name=name, blocks=tuple(blocks), after=after, markers=tuple(markers))


def documentation_pages(root: Path = ROOT) -> dict[str, Path]:
    """Every page of the site and the README, by name relative to ``docs/`` (README: as is)."""
    pages = {"README.md": root / "README.md"}
    docs = root / "docs"
    for path in sorted(docs.rglob("*.md")):
        pages[path.relative_to(docs).as_posix()] = path
    return pages
