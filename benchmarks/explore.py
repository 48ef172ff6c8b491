"""Exploration throughput: schedules explored per second, against plain runs of the same scenario.

In-process: the bundled happy path (``scenarios/booking/happy_confirm_button.yaml``)
against the booking agent. Each repetition measures, taking turns (which goes
first alternates), the baseline, plain runs of the scenario as ``harness run``
plays it (one runner, one event loop), and ``explore`` with the same number
of schedules (the agent is correct, so every schedule is played). The
figures are runs per second of each and their ratio (median, min-max): what
drawing a schedule, writing its faults in and playing them costs over a plain
run.

``--url`` adds the same comparison for an agent at a URL: one independent
loopback bot (``tests/bots/inline.py``), explored on a one-turn scenario
in-process (its app built in this process) and in a process of its own over
loopback HTTP, taking turns. The bot answers each message at once, so the
search finds a failure and shrinks it: the figure is seconds per schedule
played, search and shrinking alike, and the URL's slowdown over in-process.

Run: ``python benchmarks/explore.py`` (``--budget 200 --repeat 5`` by default;
``--quick`` for 50 and 3; ``--url`` for the URL comparison too).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.channel import AgentEnvironment  # noqa: E402  # after the path tweak
from harness.suites.explorer import explore  # noqa: E402
from harness.suites.preflight import bind_invariants  # noqa: E402
from harness.suites.runner import Runner, RunOptions  # noqa: E402
from harness.suites.scenario import Scenario, load_scenario, parse_scenario  # noqa: E402
from tests.bots import inline  # noqa: E402
from tests.bots.loopback import free_port, started_process  # noqa: E402
from tests.bots.meta import PHONE_NUMBER_ID, SETTINGS  # noqa: E402

HAPPY = ROOT / "scenarios" / "booking" / "happy_confirm_button.yaml"
GREETING = """
name: a greeting answered once
steps:
  - say: hello there, is anyone around today
  - expect: {replies: 1}
invariants: [one_reply_per_burst, every_inbound_answered]
"""


def plain_runs(runner: Runner, scenario: Scenario, count: int) -> float:
    """Runs per second of ``count`` plain runs of ``scenario`` on one event loop."""
    invariants = bind_invariants(scenario)
    runner.check([scenario])

    async def go() -> None:
        for _ in range(count):
            result = await runner.run_scenario(scenario, invariants)
            assert result.status == "passed", result.error or result.violations

    started = time.perf_counter()
    asyncio.run(go())
    return count / (time.perf_counter() - started)


def explored(runner: Runner, scenario: Scenario, budget: int, seed: int) -> tuple[float, int]:
    """Schedules per second of one search, and how many schedules it played."""
    started = time.perf_counter()
    found = explore(runner, scenario, budget=budget, seed=seed)
    elapsed = time.perf_counter() - started
    return found.stats.runs / elapsed, found.stats.runs


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f}  ({min(values):.2f}-{max(values):.2f})"


def in_process(budget: int, repeat: int) -> None:
    """The happy path: plain runs against explored schedules, taking turns."""
    scenario = load_scenario(HAPPY)
    runner = Runner(RunOptions(concurrency=1))
    plain: list[float] = []
    searched: list[float] = []
    for rep in range(repeat):

        def baseline() -> None:
            plain.append(plain_runs(runner, scenario, budget))

        def search(seed: int = rep) -> None:
            searched.append(explored(runner, scenario, budget, seed)[0])

        order: list[Callable[[], None]] = [baseline, search]
        for measure in order if rep % 2 == 0 else reversed(order):
            measure()
    ratios = [s / p for s, p in zip(searched, plain, strict=True)]
    print(f"{HAPPY.relative_to(ROOT)} in-process, {budget} runs each, {repeat} repetitions")
    print("                              median  (min-max)")
    print(f"plain runs/s               {_summary(plain)}")
    print(f"explored schedules/s       {_summary(searched)}")
    print(f"explore / plain            {_summary(ratios)}")


def _bot_factory(env: AgentEnvironment) -> Any:
    return inline.create_app(env.settings, client=env.http_client)


async def _at_url(budget: int, seed: int) -> tuple[float, int]:
    graph_port = free_port()
    env = {**SETTINGS, "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}"}
    async with started_process("tests.bots.inline", env=env, ready_path="/webhook") as (url, _):
        options = RunOptions(
            target_url=f"{url}/webhook",
            concurrency=1,
            quiet=0.2,
            expect_timeout=3.0,
            channel_options={
                "graph_url": f"http://127.0.0.1:{graph_port}",
                "serve_graph": True,
                "app_secret": SETTINGS["WHATSAPP_APP_SECRET"],
                "verify_token": SETTINGS["WHATSAPP_VERIFY_TOKEN"],
                "access_token": SETTINGS["WHATSAPP_ACCESS_TOKEN"],
                "phone_number_id": PHONE_NUMBER_ID,
            },
        )
        scenario = parse_scenario(GREETING)
        return await asyncio.to_thread(explored, Runner(options), scenario, budget, seed)


def at_a_url(budget: int, repeat: int) -> None:
    """One bot, in-process and at a URL: seconds per schedule played, taking turns."""
    scenario = parse_scenario(GREETING)
    local = Runner(
        RunOptions(
            concurrency=1,
            channel_options={
                "app_secret": SETTINGS["WHATSAPP_APP_SECRET"],
                "verify_token": SETTINGS["WHATSAPP_VERIFY_TOKEN"],
                "access_token": SETTINGS["WHATSAPP_ACCESS_TOKEN"],
                "phone_number_id": PHONE_NUMBER_ID,
            },
        ),
        factory=_bot_factory,
    )
    here: list[float] = []
    there: list[float] = []
    played: list[int] = []
    for rep in range(repeat):

        def local_search(seed: int = rep) -> None:
            here.append(1 / explored(local, scenario, budget, seed)[0])

        def url_search(seed: int = rep) -> None:
            rate, runs = asyncio.run(_at_url(budget, seed))
            played.append(runs)
            there.append(1 / rate)

        order: list[Callable[[], None]] = [local_search, url_search]
        for measure in order if rep % 2 == 0 else reversed(order):
            measure()
    ratios = [t / h for t, h in zip(there, here, strict=True)]
    print()
    print(f"the inline bot, one-turn scenario, budget {budget}, {repeat} repetitions")
    print(f"(schedules played at the URL, search and shrinking: {played})")
    print("                              median  (min-max)")
    print(f"in-process s/schedule      {_summary(here)}")
    print(f"at a URL s/schedule        {_summary(there)}")
    print(f"URL / in-process           {_summary(ratios)}")


def main() -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="budget 50, 3 repetitions")
    parser.add_argument("--url", action="store_true", help="also measure an agent at a URL")
    args = parser.parse_args()
    budget, repeat = (50, 3) if args.quick else (args.budget, args.repeat)
    in_process(budget, repeat)
    if args.url:
        at_a_url(min(budget, 10), repeat)


if __name__ == "__main__":
    main()
