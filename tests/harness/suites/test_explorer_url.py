"""``harness explore`` against an agent at a URL: an independent bot in its own process.

The bot (``tests/bots/per_fragment.py``) answers every message at once, with
no dedupe and no debounce. Explored over loopback HTTP on real time, it is
caught, the failing schedule shrinks to one fault, and the written scenario
fails again when run against the same URL.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.suites.explorer import explore
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots.loopback import free_port, started_process
from tests.bots.meta import PHONE_NUMBER_ID, SETTINGS

pytestmark = pytest.mark.network

SCENARIO = """
name: a greeting answered once
steps:
  - say: hello there, is anyone around today
  - expect: {replies: 1}
invariants:
  - one_reply_per_burst
  - every_inbound_answered
"""


async def test_explore_finds_a_bot_at_a_url_that_answers_each_fragment(tmp_path: Path) -> None:
    graph_port = free_port()
    env = {**SETTINGS, "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}"}
    options = RunOptions(
        target_url="",
        concurrency=1,
        quiet=0.5,  # real time: enough for a loaded machine to answer
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
    scenario = parse_scenario(SCENARIO)
    bot = started_process("tests.bots.per_fragment", env=env, ready_path="/webhook")
    async with bot as (url, _):
        runner = Runner(RunOptions(**{**vars(options), "target_url": f"{url}/webhook"}))
        # explore runs its own event loop: off this one, which serves nothing it needs.
        found = await asyncio.to_thread(explore, runner, scenario, budget=10, seed=0)
        assert found.finding is not None
        again = await runner.run_scenario(parse_scenario(found.finding.scenario.to_yaml()))
    assert found.finding.schedule.size == 1
    assert set(found.finding.schedule.kinds) <= {"split", "duplicate", "answer_lost", "redeliver"}
    assert found.finding.result.status == "failed"
    assert again.status == "failed"
