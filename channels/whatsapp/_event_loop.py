"""Which event loop a long-running command (``harness serve``, ``harness load``) runs on.

Both spend most of their time in the event loop itself: HTTP requests in,
webhook POSTs out, timers. uvloop runs that same work on libuv, at a fraction
of the CPU per request, and uvicorn and aiohttp run on it unchanged; it is a
dependency wherever it builds (CPython on Linux and macOS). ``--loop auto``,
the default, takes it when it is installed; ``--loop asyncio`` keeps the
standard library's loop (for a debugger or a profiler that expects it).
In-process runs and the test suite keep their own loop: only these commands
choose one.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

if TYPE_CHECKING:
    import asyncio

__all__ = ["LOOPS", "loop_factory", "loop_name", "loop_option", "run_on"]

LOOPS: Final = ("auto", "asyncio", "uvloop")
"""The values of ``--loop``."""

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
LoopFactory = Callable[[], "asyncio.AbstractEventLoop"]


def loop_factory(name: str) -> LoopFactory | None:
    """What makes the loop ``name`` names; None for the standard library's.

    ``auto`` is uvloop when it can be imported, else the standard loop;
    ``uvloop`` when it can't raises :class:`click.BadParameter`.
    """
    if name == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if name == "uvloop":
            raise click.BadParameter(
                "uvloop is not installed here (it builds on CPython for Linux and macOS);"
                " use --loop asyncio",
                param_hint="--loop",
            ) from None
        return None
    factory: LoopFactory = uvloop.new_event_loop
    return factory


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: which loop ``loop`` is, as ``--loop`` names it."""
    return "uvloop" if type(loop).__module__.partition(".")[0] == "uvloop" else "asyncio"


def run_on(factory: LoopFactory | None, main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a loop ``factory`` makes (None: the standard loop)."""
    import asyncio

    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def loop_option(command: F) -> F:
    """Add ``--loop``: the command gets its value as ``loop``."""
    option = click.option(
        "--loop",
        type=click.Choice(LOOPS),
        default="auto",
        show_default=True,
        help="The event loop: uvloop (less CPU per request) when installed, or asyncio.",
    )
    return option(command)
