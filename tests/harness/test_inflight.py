"""Real work in flight keeps virtual time still: holds, busy(), BusyTransport and the limit."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import aiohttp
import httpx
import pytest

from harness.clock import OffsetClock, VirtualClock
from harness.exceptions import ClockError, RealWorkTimeout
from harness.inflight import BusyTransport, busy, current_clock, running_on
from harness.llm import LLMResponse, SystemPrompt, TextBlock
from harness.llm_recorder import RecordingLLMClient
from harness.tape import RecordMode
from tests.bots.loopback import serve_in_process


def _offset(clock: VirtualClock) -> float:
    """Virtual seconds since the clock's default start."""
    return (clock.now() - VirtualClock().now()).total_seconds()


async def _wake_at(clock: VirtualClock, seconds: float, seen: list[tuple[str, float]]) -> None:
    await clock.sleep(seconds)
    seen.append((f"timer {seconds:g}", _offset(clock)))


async def _answer_beside_a_timer(
    clock: VirtualClock, agent: Callable[[], Awaitable[str]]
) -> list[tuple[str, float]]:
    """Run ``agent`` in a run on ``clock`` beside a timer due at 1 s; when each ended."""
    seen: list[tuple[str, float]] = []

    async def answering() -> None:
        answer = await agent()
        seen.append((answer, _offset(clock)))

    with running_on(clock):
        tasks = [asyncio.create_task(_wake_at(clock, 1.0, seen)), asyncio.create_task(answering())]
    await asyncio.sleep(0)
    await clock.run_until(clock.now() + timedelta(seconds=2))
    await asyncio.gather(*tasks)
    return seen


async def test_virtual_time_waits_for_real_work_then_timers_fire_in_order() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []

    async def real_work() -> None:
        with clock.hold("a slow service"):
            await asyncio.sleep(0.05)  # real time: the loop is idle meanwhile
            seen.append(("work done", _offset(clock)))

    tasks = [
        asyncio.create_task(_wake_at(clock, 2.0, seen)),
        asyncio.create_task(_wake_at(clock, 1.0, seen)),
        asyncio.create_task(real_work()),
    ]
    await asyncio.sleep(0)
    await clock.run_until(clock.now() + timedelta(seconds=5))
    await asyncio.gather(*tasks)
    assert seen == [("work done", 0.0), ("timer 1", 1.0), ("timer 2", 2.0)]


async def test_without_a_hold_the_clock_jumps_over_the_real_work() -> None:
    # The control experiment for the test above: this is the bug holds prevent.
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []

    async def unannounced_work() -> None:
        await asyncio.sleep(0.05)
        seen.append(("work done", _offset(clock)))

    tasks = [
        asyncio.create_task(_wake_at(clock, 1.0, seen)),
        asyncio.create_task(unannounced_work()),
    ]
    await asyncio.sleep(0)
    await clock.run_until(clock.now() + timedelta(seconds=5))
    await asyncio.gather(*tasks)
    assert seen == [("timer 1", 1.0), ("work done", 5.0)]


async def test_auto_advance_waits_for_real_work_too() -> None:
    clock = VirtualClock(auto_advance=True)
    seen: list[tuple[str, float]] = []

    async def real_work() -> None:
        with clock.hold("model call"):
            await asyncio.sleep(0.05)
            seen.append(("work done", _offset(clock)))

    await asyncio.gather(_wake_at(clock, 3.0, seen), real_work())
    assert seen == [("work done", 0.0), ("timer 3", 3.0)]


async def test_work_in_a_worker_thread_holds_the_clock() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []
    inside: list[list[str]] = []

    def blocking() -> None:
        # busy() entered and left on the worker thread itself, nested in the loop's hold.
        with busy("the blocking part"):
            inside.append([what for what, _ in clock.in_flight])
            time.sleep(0.05)

    async def threaded() -> None:
        with running_on(clock), busy("a call into a worker thread"):
            # The hold starts before the thread does: nothing in between lets time jump.
            await asyncio.to_thread(blocking)  # the thread inherits the run's context
        seen.append(("thread done", _offset(clock)))

    tasks = [asyncio.create_task(_wake_at(clock, 1.0, seen)), asyncio.create_task(threaded())]
    await asyncio.sleep(0)
    await clock.run_until(clock.now() + timedelta(seconds=2))
    await asyncio.gather(*tasks)
    assert seen == [("thread done", 0.0), ("timer 1", 1.0)]
    # The loop's default executor holds the clock too, for as long as the thread works.
    assert inside == [["a call into a worker thread", "blocking in a thread", "the blocking part"]]
    assert clock.in_flight == []


@pytest.mark.parametrize("how", ["to_thread", "run_in_executor"])
async def test_work_handed_to_the_loops_thread_pool_holds_the_run_clock_unannounced(
    how: str,
) -> None:
    # A synchronous SDK called off the loop, with no busy() around it: the loop is idle.
    clock = VirtualClock()
    inside: list[list[str]] = []

    def sync_model_call() -> str:
        inside.append([what for what, _ in clock.in_flight])
        time.sleep(0.1)
        return "answer"

    async def agent() -> str:
        loop = asyncio.get_running_loop()
        if how == "to_thread":
            return await asyncio.to_thread(sync_model_call)
        return await loop.run_in_executor(None, sync_model_call)

    assert await _answer_beside_a_timer(clock, agent) == [("answer", 0.0), ("timer 1", 1.0)]
    assert inside == [["sync_model_call in a thread"]]
    assert clock.in_flight == []


class _SlowToTell(Future[Any]):
    """A future that tells its callbacks one at a time, pausing between them.

    As a busy machine does when it takes the GIL from the worker thread
    between the callbacks that end the work and hand its result to the loop.
    """

    def _invoke_callbacks(self) -> None:
        for callback in list(self._done_callbacks):  # type: ignore[attr-defined]
            callback(self)
            time.sleep(0.05)


class _SlowToTellPool(ThreadPoolExecutor):
    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        told = _SlowToTell()

        def run() -> None:
            try:
                told.set_result(fn(*args, **kwargs))
            except BaseException as error:
                told.set_exception(error)

        super().submit(run)
        return told


def _slow_answer() -> str:
    time.sleep(0.05)  # long enough for the loop to be waiting on it when it ends
    return "answer"


async def test_virtual_time_waits_until_the_threads_result_is_back_on_the_loop() -> None:
    # Between the work ending and its caller going on, a timer due later must not fire.
    clock = VirtualClock()
    pool = _SlowToTellPool(max_workers=1)
    asyncio.get_running_loop().set_default_executor(pool)

    async def agent() -> str:
        return await asyncio.to_thread(_slow_answer)

    assert await _answer_beside_a_timer(clock, agent) == [("answer", 0.0), ("timer 1", 1.0)]
    assert clock.in_flight == []
    pool.shutdown()


async def test_a_call_into_the_loops_pool_that_is_cancelled_still_lets_time_move() -> None:
    clock = VirtualClock()
    started = threading.Event()
    release = threading.Event()

    def stuck() -> None:
        started.set()
        release.wait(5)

    with running_on(clock):
        task = asyncio.create_task(asyncio.to_thread(stuck))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    for _ in range(100):  # the thread ends on its own; its hold goes with it
        if not clock.in_flight:
            break
        await asyncio.sleep(0.01)
    assert clock.in_flight == []


async def test_outside_a_run_the_loops_thread_pool_holds_nothing_and_keeps_its_threads() -> None:
    clock = VirtualClock()
    loop = asyncio.get_running_loop()
    mine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agents-own")
    loop.set_default_executor(mine)  # set by the agent before any run
    with running_on(clock):
        in_run = await asyncio.to_thread(lambda: threading.current_thread().name)
    outside = await asyncio.to_thread(lambda: [what for what, _ in clock.in_flight])
    assert in_run.startswith("agents-own")  # the work still runs on the agent's pool
    assert outside == []
    mine.shutdown()


async def test_a_holder_that_sleeps_on_the_clock_does_not_keep_it_still() -> None:
    # Holding around code that waits for virtual time must not deadlock the run.
    clock = VirtualClock(real_work_limit=2.0)

    async def holder() -> float:
        with clock.hold("a model that sleeps on the virtual clock"):
            await clock.sleep(30)
        return _offset(clock)

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)
    started = time.monotonic()
    await clock.run_until(clock.now() + timedelta(seconds=60))
    assert await task == 30.0
    assert time.monotonic() - started < 1.0


async def test_real_work_past_the_limit_raises_naming_the_call() -> None:
    clock = VirtualClock(real_work_limit=0.2)
    never = asyncio.Event()

    async def hung() -> None:
        with clock.hold("model call (claude-sonnet-4-6)"):
            await never.wait()

    task = asyncio.create_task(hung())
    await asyncio.sleep(0)
    with pytest.raises(RealWorkTimeout) as caught:
        await clock.run_until(clock.now() + timedelta(seconds=1))
    task.cancel()
    message = str(caught.value)
    assert "0.2 s limit" in message
    assert "model call (claude-sonnet-4-6) (in flight 0.2 s)" in message
    assert [what for what, _ in caught.value.work] == ["model call (claude-sonnet-4-6)"]
    assert clock.now() == VirtualClock().now()  # time did not move past the hung call


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ClockError, match="real_work_limit"):
        VirtualClock(real_work_limit=0)


async def test_busy_holds_the_current_runs_clock_and_nothing_outside_a_run() -> None:
    clock = VirtualClock()
    assert current_clock() is None
    with busy("outside any run"):
        assert clock.in_flight == []
    with running_on(OffsetClock(clock, timedelta(minutes=-5))):  # the agent's skewed view
        assert current_clock() is clock
        with busy("inside the run"):
            assert [what for what, _ in clock.in_flight] == ["inside the run"]
        assert clock.in_flight == []
    assert current_clock() is None


async def test_tasks_started_inside_a_run_inherit_its_clock() -> None:
    clock = VirtualClock()
    with running_on(clock):
        found = await asyncio.create_task(_current())
    assert found is clock
    assert await asyncio.create_task(_current()) is None


async def _current() -> VirtualClock | None:
    return current_clock()


async def test_busy_transport_holds_until_the_response_body_is_closed() -> None:
    clock = VirtualClock()
    observed: list[list[str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        observed.append([what for what, _ in clock.in_flight])
        if request.url.path == "/ping":
            return httpx.Response(200, json={"ok": True})  # a body that comes whole
        return httpx.Response(200, stream=_Chunks([b'{"id": ', b"42}"]))

    transport = BusyTransport(httpx.MockTransport(handler))
    with running_on(clock):
        async with httpx.AsyncClient(transport=transport) as client:
            async with client.stream("GET", "http://crm.example/customers/42?x=1") as response:
                assert [what for what, _ in clock.in_flight] == [
                    "HTTP GET http://crm.example/customers/42"
                ]
                await response.aread()
            assert clock.in_flight == []
            plain = await client.get("http://crm.example/ping")
            assert plain.json() == {"ok": True}
            assert clock.in_flight == []
    assert observed == [
        ["HTTP GET http://crm.example/customers/42"],
        ["HTTP GET http://crm.example/ping"],
    ]


@pytest.mark.parametrize("package", ["httpx", "httpx2"])
async def test_httpx_over_the_network_holds_the_run_clock_unannounced(package: str) -> None:
    # A plain client, no BusyTransport; the Anthropic and OpenAI SDKs send through httpx2.
    client_type: type[httpx.AsyncClient] = importlib.import_module(package).AsyncClient
    clock = VirtualClock()
    seen: list[list[str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        seen.append([what for what, _ in clock.in_flight])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"[1, ", "more_body": True})
        await send({"type": "http.response.body", "body": b"2]"})

    async with serve_in_process(app) as url:
        where = f"HTTP GET {url}/slow"
        async with client_type() as client:
            with running_on(clock):
                async with client.stream("GET", f"{url}/slow?q=1") as response:
                    assert [what for what, _ in clock.in_flight] == [where]  # the body is out
                    assert await response.aread() == b"[1, 2]"
                assert clock.in_flight == []
            outside = await client.get(f"{url}/slow")  # no run: nothing held
        async with httpx.AsyncClient(transport=BusyTransport()) as told:
            with running_on(clock):
                await told.get(f"{url}/slow")  # held once, not once per layer
    assert outside.status_code == 200
    assert seen == [[where], [], [where]]


async def test_an_aiohttp_session_holds_the_run_clock_unannounced() -> None:
    clock = VirtualClock()
    seen: list[list[str]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        seen.append([what for what, _ in clock.in_flight])
        json_type = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": json_type})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})

    async with serve_in_process(app) as url, aiohttp.ClientSession() as session:
        with running_on(clock):
            async with session.get(f"{url}/crm?q=1") as response:
                assert await response.json() == {"ok": True}
            assert clock.in_flight == []
            with busy("a lookup the agent announced"):
                await (await session.get(f"{url}/crm")).read()  # held once, by the agent
        await (await session.get(f"{url}/crm")).read()  # no run: nothing held
    assert seen == [[f"HTTP GET {url}/crm"], ["a lookup the agent announced"], []]


def test_a_run_imports_no_client_package_an_agent_did_not() -> None:
    code = (
        "import asyncio, sys\n"
        "from harness.clock import VirtualClock\n"
        "from harness.inflight import running_on\n"
        "async def main():\n"
        "    with running_on(VirtualClock()):\n"
        "        pass\n"
        "asyncio.run(main())\n"
        "print('httpx2' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


class _Chunks(httpx.AsyncByteStream):
    """A response body that arrives in pieces, as one from the network does."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class _SlowModel:
    """A model that answers after a real delay, as a remote one does."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Any],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Any] | None = None,
        **params: Any,
    ) -> LLMResponse:
        await asyncio.sleep(self.delay)
        return LLMResponse(
            id="msg_1", model=model, content=(TextBlock(text="hello"),), stop_reason="end_turn"
        )


async def test_a_recorded_model_call_keeps_virtual_time_still_while_it_runs() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []
    client = RecordingLLMClient(_SlowModel(0.05), RecordMode.RECORD, clock=clock)

    async def agent() -> None:
        await client.create(model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=10)
        seen.append(("answer", _offset(clock)))

    with running_on(clock):
        tasks = [asyncio.create_task(_wake_at(clock, 1.0, seen)), asyncio.create_task(agent())]
    await asyncio.sleep(0)
    await clock.run_until(clock.now() + timedelta(seconds=2))
    await asyncio.gather(*tasks)
    assert seen == [("answer", 0.0), ("timer 1", 1.0)]


async def test_a_scenario_whose_model_hangs_ends_with_an_error_naming_the_call() -> None:
    from harness.suites.runner import Runner, RunOptions
    from harness.suites.scenario import parse_scenario

    scenario = parse_scenario(
        """
name: the model never answers
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: hello
"""
    )
    options = RunOptions(
        target="tests.harness.test_inflight:hanging_agent", concurrency=1, real_work_limit=0.3
    )
    result = (await Runner(options).run([scenario])).scenarios[0]
    assert result.status == "error"
    assert result.error is not None
    assert "0.3 s limit" in result.error
    assert "model call (a-model-that-hangs)" in result.error


class _Hangs:
    """A model that never answers."""

    async def create(self, **kwargs: Any) -> LLMResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def hanging_agent(env: Any) -> Any:
    """An in-process agent that asks a model that never answers, inside its webhook handler."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from harness.recording import wrap

    llm = wrap(_Hangs(), env)

    async def webhook(request: Request) -> PlainTextResponse:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        await llm.create(model="a-model-that-hangs", messages=[], max_tokens=10)
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
