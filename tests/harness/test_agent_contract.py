"""The factory contract: a fresh agent per call, and background failures caught and explained."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.agent_contract import (
    FRESH_AGENT_ADVICE,
    build_agent,
    explain_agent_error,
    loop_errors,
)
from harness.channel import AgentEnvironment
from harness.clock import VirtualClock
from harness.exceptions import AgentContractError, ConfigError
from harness.store import MemoryStore


class App:
    """Stands for an ASGI app: any callable object will do."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Never called here."""


def _env() -> AgentEnvironment:
    return AgentEnvironment(channel="test", settings={}, clock=VirtualClock(), store=MemoryStore())


def test_a_factory_that_builds_anew_passes() -> None:
    def factory(env: AgentEnvironment) -> App:
        return App()

    first, second = build_agent(factory, _env()), build_agent(factory, _env())
    assert isinstance(first, App)
    assert first is not second


def test_the_same_object_twice_is_refused_naming_the_factory_and_the_fix() -> None:
    shared = App()

    def once(env: AgentEnvironment) -> App:
        return shared

    assert build_agent(once, _env()) is shared
    with pytest.raises(AgentContractError) as caught:
        build_agent(once, _env())
    assert str(caught.value) == (
        f"the agent factory {__name__}:test_the_same_object_twice_is_refused_naming_the_factory"
        "_and_the_fix.<locals>.once returned the same App object for two scenarios, which then "
        f"share their state: {FRESH_AGENT_ADVICE}"
    )
    assert isinstance(caught.value, ConfigError)


def test_an_object_returned_by_another_factory_is_refused_too() -> None:
    shared = App()
    build_agent(lambda env: shared, _env())
    with pytest.raises(AgentContractError, match="returned the same App object"):
        build_agent(lambda env: shared, _env())


class Unhashable(App):
    """An app with nothing to remember it by."""

    __hash__ = None  # type: ignore[assignment]  # the point


def test_objects_that_cannot_be_compared_are_let_through() -> None:
    shared = Unhashable()
    assert build_agent(lambda env: shared, _env()) is shared
    assert build_agent(lambda env: shared, _env()) is shared


def test_an_async_factory_is_refused() -> None:
    async def factory(env: AgentEnvironment) -> App:
        return App()

    with pytest.raises(
        AgentContractError, match=r"returned an awaitable: make it a plain function"
    ):
        build_agent(factory, _env())


@pytest.mark.parametrize(
    ("built", "shown"),
    [(42, "42 (int)"), (None, "None (NoneType)"), ("x" * 80, f"'{'x' * 56}... (str)")],
    ids=["number", "nothing", "long text"],
)
def test_a_factory_that_returns_no_agent_is_refused_naming_what_it_returned(
    built: object, shown: str
) -> None:
    def factory(env: AgentEnvironment) -> object:
        return built

    with pytest.raises(AgentContractError) as caught:
        build_agent(factory, _env())
    where = f"{__name__}:test_a_factory_that_returns_no_agent_is_refused_naming_what_it_returned"
    assert str(caught.value) == (
        f"the agent factory {where}.<locals>.factory returned {shown}, which is no agent: "
        "a factory returns an ASGI app, or an object with a handle_burst method "
        "(harness.agent.DirectAgent)"
    )


class Direct:
    """An agent called directly, on its own or as an app's ``state.agent``."""

    async def handle_burst(self, user: str, messages: Any, *, now: Any) -> Any:
        """Never called here."""


class Holder:
    """Holds its agent as ``state.agent``, as an app does."""

    def __init__(self) -> None:
        self.state = type("State", (), {"agent": Direct()})()


def test_an_agent_called_directly_is_an_agent_too() -> None:
    assert isinstance(build_agent(lambda env: Direct(), _env()), Direct)
    assert isinstance(build_agent(lambda env: Holder(), _env()), Holder)


@pytest.mark.parametrize(
    ("error", "start"),
    [
        (
            RuntimeError("Task <Task pending> got Future <Future> attached to a different loop"),
            "the agent used an object made on another scenario's event loop (RuntimeError: Task",
        ),
        (
            RuntimeError("<asyncio.locks.Lock object> is bound to a different event loop"),
            "the agent used an object made on another scenario's event loop (RuntimeError: <",
        ),
        (
            RuntimeError("Event loop is closed"),
            "the agent used an object made on an event loop that has closed (RuntimeError: Event",
        ),
        (
            RuntimeError("Cannot send a request, as the client has been closed."),
            "the agent used an HTTP client that was already closed (RuntimeError: Cannot send",
        ),
    ],
)
def test_loop_and_client_mistakes_are_explained_with_the_fix(error: Exception, start: str) -> None:
    explained = explain_agent_error(error)
    assert explained.startswith(start)
    assert FRESH_AGENT_ADVICE in explained
    assert "\n" not in explained


def test_the_cause_of_a_wrapped_error_is_found() -> None:
    try:
        try:
            raise RuntimeError("Event loop is closed")
        except RuntimeError as inner:
            raise ValueError("sending failed") from inner
    except ValueError as outer:
        wrapped = outer
    assert explain_agent_error(wrapped).startswith(
        "the agent used an object made on an event loop that has closed"
    )


def test_any_other_error_is_its_type_and_first_line() -> None:
    assert explain_agent_error(KeyError("WHATSAPP_APP_SECRET")) == "KeyError: 'WHATSAPP_APP_SECRET'"
    assert explain_agent_error(ValueError("first\nsecond")) == "ValueError: first"
    assert explain_agent_error(ValueError()) == "ValueError"


# -- what crashes in the background -------------------------------------------------------


async def _fail(message: str) -> None:
    await asyncio.sleep(0)
    raise RuntimeError(message)


async def test_a_background_task_that_crashed_unseen_is_reported_and_not_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    loop = asyncio.get_running_loop()
    handler, factory = loop.get_exception_handler(), loop.get_task_factory()
    async with loop_errors() as crashed:
        kept = asyncio.get_running_loop().create_task(_fail("lost"))
        await asyncio.sleep(0.01)
        assert kept.done()
        assert crashed == []  # filled in when the block ends
    assert [str(e) for e in crashed] == ["lost"]
    del kept  # collected now, it prints nothing: its exception was read
    assert "never retrieved" not in capsys.readouterr().err
    assert (loop.get_exception_handler(), loop.get_task_factory()) == (handler, factory)


async def test_a_crash_someone_awaited_is_not_reported() -> None:
    async with loop_errors() as crashed:
        with pytest.raises(RuntimeError):
            await asyncio.get_running_loop().create_task(_fail("seen"))
    assert crashed == []


async def test_work_left_running_when_the_block_ends_is_cancelled() -> None:
    async with loop_errors() as crashed:
        forever = asyncio.get_running_loop().create_task(asyncio.sleep(3600))
    assert forever.cancelled()
    assert crashed == []


async def test_blocks_sharing_a_loop_each_get_their_own_tasks_crashes() -> None:
    started = asyncio.Event()
    finish = asyncio.Event()

    async def scenario(message: str, first: bool) -> list[BaseException]:
        async with loop_errors() as crashed:
            asyncio.get_running_loop().create_task(_fail(message))
            if first:
                started.set()
                await finish.wait()
            else:
                await started.wait()
                await asyncio.sleep(0.01)
                finish.set()
        return crashed

    one, two = await asyncio.gather(scenario("one", True), scenario("two", False))
    assert [str(e) for e in one] == ["one"]
    assert [str(e) for e in two] == ["two"]


def test_other_reports_go_to_the_loops_own_handler() -> None:
    seen: list[dict[str, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: seen.append(context))
        async with loop_errors() as crashed:
            loop.call_exception_handler({"message": "a slow callback"})
        assert crashed == []

    asyncio.run(main())
    assert [c["message"] for c in seen] == ["a slow callback"]
