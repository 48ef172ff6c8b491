"""A reader's terminal: a page's blocks run one after another, as typed.

The session starts in a copy of the project (its root, without the virtual
environment, caches and reports), with a home folder of its own, the project's
virtual environment first on ``PATH``, and no API key, Redis URL or harness
setting from the test's own environment. ``pip`` may not reach an index, so a
page that needs the network fails. What a block changes (the directory it
``cd``-ed to, variables it exported) carries over to the next, as in one shell;
a file block is written where the reader stands.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.docs.pages import ROOT, Block, commands_of

__all__ = ["BlockFailed", "Session", "copy_project"]

# Kept out of the copy: what is built, cached or written by runs, never read by the docs.
_NOT_COPIED = {
    ".git",
    ".venv",
    "venv",
    "site",
    "reports",
    ".harness_cache",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "wa_harness.egg-info",
}
_CLEARED_PREFIXES = ("ANTHROPIC_", "OPENAI_", "OTEL_", "HARNESS_", "BOOKING_", "WHATSAPP_")
_CLEARED_PREFIXES_TOO = ("PYTEST_", "PIP_", "VIRTUAL_ENV", "PYTHON")
BLOCK_TIMEOUT = 300.0


class BlockFailed(AssertionError):
    """A block that ended with another status than the page says, with what it printed."""


def copy_project(into: Path) -> Path:
    """The project as a reader has it after cloning it (what :data:`_NOT_COPIED` leaves out)."""
    shutil.copytree(
        ROOT, into, ignore=lambda _folder, names: [n for n in names if n in _NOT_COPIED]
    )
    return into


def _environment(home: Path) -> dict[str, str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_CLEARED_PREFIXES + _CLEARED_PREFIXES_TOO)
        and name not in ("REDIS_URL", "COLUMNS")
    }
    venv = Path(sys.executable).parent
    environment.update(
        HOME=str(home),
        PATH=f"{venv}{os.pathsep}{environment.get('PATH', '')}",
        VIRTUAL_ENV=str(venv.parent),
        PIP_NO_INDEX="1",  # offline: a page that needs a download fails here
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return environment


@dataclass
class Session:
    """One reader's terminal, starting at ``start`` with ``home`` as their home folder."""

    start: Path
    home: Path
    state: Path

    @classmethod
    def open(cls, where: Path) -> Session:
        """A session in ``where``: the project copied into it, a home folder beside it."""
        project = copy_project(where / "project")
        home = where / "home"
        state = where / "state"
        home.mkdir()
        state.mkdir()
        (state / "cwd").write_text(str(project), encoding="utf-8")
        (state / "env").write_text("", encoding="utf-8")
        return cls(start=project, home=home, state=state)

    @property
    def cwd(self) -> Path:
        """Where the reader stands now."""
        return Path((self.state / "cwd").read_text(encoding="utf-8").strip())

    def run(self, block: Block) -> str:
        """Run or save one block; returns what it printed. Raises :class:`BlockFailed`."""
        path = block.file
        if path is not None:
            target = self.cwd / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text.split("\n", 1)[1], encoding="utf-8")
            return ""
        state = shlex.quote(str(self.state))
        script = (
            f". {state}/env 2>/dev/null || true\n"
            f'cd -- "$(cat {state}/cwd)"\n'
            f"_docs_keep() {{ pwd > {state}/cwd; export -p > {state}/env; }}\n"
            "trap _docs_keep EXIT\n"
            "set -e\n" + commands_of(block) + "_docs_keep\n"  # a block may set a trap of its own
        )
        # The block runs in a session of its own: what it started and left running (a server
        # in the background, or every command of a block that timed out) is killed with it.
        with subprocess.Popen(
            ["bash", "-c", script],
            env=_environment(self.home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as done:
            try:
                stdout, stderr = done.communicate(timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired as exc:
                raise BlockFailed(
                    f"{block.where}: still running after {exc.timeout:.0f}s"
                ) from None
            finally:
                with contextlib.suppress(ProcessLookupError):  # nothing of it is left
                    os.killpg(done.pid, signal.SIGKILL)
        printed = stdout + stderr
        if done.returncode != block.exit_code:
            raise BlockFailed(
                f"{block.where}: exited {done.returncode}, the page says {block.exit_code}\n"
                f"--- the block\n{block.text}--- what it printed (the end)\n{printed[-4000:]}"
            )
        missing = [text for text in block.prints if text not in printed]
        if missing:
            raise BlockFailed(
                f"{block.where}: the output lacks {missing}\n"
                f"--- the block\n{block.text}--- what it printed (the end)\n{printed[-4000:]}"
            )
        return printed
