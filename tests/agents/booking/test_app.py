"""Building the app: lazily from the environment for uvicorn, with clear errors."""

from __future__ import annotations

import asyncio
import importlib

import httpx
import pytest
from pydantic import SecretStr
from starlette.applications import Starlette

import agents.booking
from agents.booking import BookingAgent, BookingSettings, ScriptedModel, build_llm, create_app
from harness.exceptions import ConfigError
from harness.llm import AnthropicClient
from tests.agents.booking.support import make_settings
from tests.support.cancellation import LosesOneCancellation

ENV = {
    "WHATSAPP_ACCESS_TOKEN": "tok",
    "WHATSAPP_PHONE_NUMBER_ID": "123",
    "WHATSAPP_APP_SECRET": "sec",
    "WHATSAPP_VERIFY_TOKEN": "ver",
}


@pytest.fixture
def fresh_package() -> object:
    module = importlib.reload(agents.booking)
    yield module
    module.__dict__.pop("app", None)


def test_importing_builds_nothing(fresh_package: object) -> None:
    assert "app" not in vars(fresh_package)


def test_app_is_built_from_the_environment_on_first_access(
    monkeypatch: pytest.MonkeyPatch, fresh_package: object
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BOOKING_REGRESSIONS", "no_chunking")
    app = fresh_package.app  # type: ignore[attr-defined]
    assert isinstance(app, Starlette)
    assert app is fresh_package.app  # type: ignore[attr-defined]
    agent = app.state.agent
    assert isinstance(agent, BookingAgent)
    assert agent.settings.phone_number_id == "123"
    assert isinstance(agent.llm, ScriptedModel)


def test_app_without_the_whatsapp_settings_names_what_is_missing(fresh_package: object) -> None:
    with pytest.raises(ConfigError, match="WHATSAPP_APP_SECRET"):
        fresh_package.app  # type: ignore[attr-defined]  # noqa: B018


def test_other_attributes_are_still_missing(fresh_package: object) -> None:
    with pytest.raises(AttributeError):
        fresh_package.nothing_here  # type: ignore[attr-defined]  # noqa: B018


def test_the_anthropic_model_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_llm(BookingSettings(llm="anthropic"))
    client = build_llm(BookingSettings(llm="anthropic", anthropic_api_key=SecretStr("sk-test")))
    assert isinstance(client, AnthropicClient)
    assert isinstance(build_llm(BookingSettings()), ScriptedModel)


async def test_health_and_root_route() -> None:
    app = create_app(make_settings())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://agent.test"
    ) as client:
        health = await client.get("/healthz")
        assert health.json() == {"ok": True, "idle": True, "timers": 0}
        params = {"hub.mode": "subscribe", "hub.challenge": "42", "hub.verify_token": "test-verify"}
        assert (await client.get("/", params=params)).text == "42"
    await app.state.agent.aclose()


async def test_the_agent_closes_when_a_follow_up_loses_its_cancellation() -> None:
    # A follow-up asleep on a clock that polls Redis can lose a cancellation in a read
    # (Python 3.11): one cancel() and a wait with no limit kept the agent from closing.
    app = create_app(make_settings())
    agent = app.state.agent
    losing = LosesOneCancellation()

    async def follow_up() -> None:
        while True:
            await losing.sleep(0.05)

    timer = agent.spawn(follow_up(), timer=True)
    await asyncio.sleep(0.01)
    closing = asyncio.create_task(agent.aclose())
    done, _ = await asyncio.wait({closing}, timeout=10)
    assert closing in done, "the agent waits for ever on a follow-up that lost its cancellation"
    assert losing.lost == 1
    assert timer.cancelled()
