"""The prompt debugger's web app: fixtures, the agent's prompts, replays and saving.

Pages (HTML): ``/`` the fixture list and the prompt editor,
``/fixtures/{id}`` the same with one fixture open, ``/fixtures/{id}/chat``
its recorded conversation as the run report draws it, and
``/replays/{job}/{id}/diff`` a replay beside its recording, as the diff
page draws it. The browser works through a small JSON API:

- ``POST /api/replays`` ``{"fixtures": [ids], "prompts": {name: text}}``
  queues a replay and answers its job id;
- ``GET /api/replays/{job}?after=N&wait=S`` answers the job's events after
  the first ``N``, waiting up to ``S`` seconds for one;
- ``POST /api/prompts/{name}`` ``{"text": ..., "based_on": digest}`` saves a
  prompt the agent declares, at the path it declares.

Nothing is written but by that last call. The app is for one person on
their own machine: it answers only requests addressed to a loopback name,
and takes changes only as JSON from its own pages.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from harness.exceptions import HarnessError
from harness.fixture import load_fixture
from harness.prompts import PromptFile, declared_prompts
from harness.report import render_diff_html, render_html
from harness.suites.runner import Runner
from harness.ui.catalog import FixtureEntry, recorded_run
from harness.ui.jobs import Replayer
from harness.ui.saving import PromptConflict, digest, save_prompt

__all__ = ["LOOPBACK_NAMES", "UIState", "create_app"]

#: The host names the app answers to (a page on any other name is refused: DNS rebinding).
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_MAX_WAIT = 25.0


@dataclass
class UIState:
    """What the app serves: the fixtures, the agent's runner and settings, the replays."""

    entries: Sequence[FixtureEntry]
    runner: Runner
    agent_settings: Mapping[str, str]
    replayer: Replayer

    def prompts(self) -> list[PromptFile]:
        """The agent's prompts as they are on disk now."""
        return declared_prompts(self.runner.factory, self.agent_settings)

    def entry(self, fixture_id: int) -> FixtureEntry | None:
        """The fixture with this id, or None."""
        if 0 <= fixture_id < len(self.entries):
            return self.entries[fixture_id]
        return None


def _load(name: str) -> str | None:
    try:
        return resources.files("harness.ui").joinpath("templates", name).read_text("utf-8")
    except FileNotFoundError:
        return None


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _report_css() -> str:
    # The run report's look (colours, bubbles) is the app's too.
    return resources.files("harness.report").joinpath("templates", "report.css").read_text("utf-8")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _page(state: UIState, selected: FixtureEntry | None) -> HTMLResponse:
    prompts = state.prompts()
    html = (
        _environment()
        .get_template("ui.html.j2")
        .render(
            entries=state.entries,
            selected=selected,
            prompts=[(p, digest(p.text)) for p in prompts],
            target=state.runner.target,
            css=Markup(_report_css() + "\n" + (_load("ui.css") or "")),
            script=Markup(_load("ui.js") or ""),
        )
    )
    return HTMLResponse(html)


async def _json_body(request: Request) -> dict[str, Any] | JSONResponse:
    """The request's JSON object; a refusal unless it is JSON, from our own page."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        return _error(403, f"refused a change from another site ({origin})")
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return _error(415, "send JSON (Content-Type: application/json)")
    try:
        body = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError) as exc:
        return _error(400, f"the body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _error(400, "the body must be a JSON object")
    return body


def create_app(
    entries: Sequence[FixtureEntry], runner: Runner, agent_settings: Mapping[str, str]
) -> Starlette:
    """The app over ``entries``, replaying them through ``runner`` with ``agent_settings``."""
    state = UIState(entries, runner, dict(agent_settings), Replayer(runner))

    async def index(request: Request) -> Response:
        return _page(state, None)

    async def fixture_page(request: Request) -> Response:
        entry = state.entry(request.path_params["fixture"])
        if entry is None:
            return HTMLResponse("no such fixture", status_code=404)
        return _page(state, entry)

    async def fixture_chat(request: Request) -> Response:
        entry = state.entry(request.path_params["fixture"])
        if entry is None:
            return HTMLResponse("no such fixture", status_code=404)
        try:
            fixture = load_fixture(entry.path)
            run = recorded_run(fixture)
        except HarnessError as exc:
            return HTMLResponse(f"can't read the fixture: {exc}", status_code=422)
        return HTMLResponse(render_html(run))

    async def list_prompts(request: Request) -> Response:
        return JSONResponse(
            [
                {"name": p.name, "path": str(p.path), "text": p.text, "digest": digest(p.text)}
                for p in state.prompts()
            ]
        )

    async def save(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        name = request.path_params["name"]
        text, based_on = body.get("text"), body.get("based_on")
        if not isinstance(text, str):
            return _error(400, "text: expected the prompt's text, a string")
        if based_on is not None and not isinstance(based_on, str):
            return _error(400, "based_on: expected the digest the edit started from")
        found = {p.name: p for p in state.prompts()}
        if name not in found:
            known = ", ".join(sorted(found)) or "none"
            return _error(404, f"the agent declares no prompt {name!r} (it declares: {known})")
        try:
            saved = save_prompt(found[name], text, based_on=based_on)
        except PromptConflict as exc:
            return _error(409, str(exc))
        except OSError as exc:
            return _error(500, f"{found[name].path}: can't write: {exc.strerror}")
        return JSONResponse(
            {
                "name": name,
                "path": str(saved.path),
                "backup": None if saved.backup is None else str(saved.backup),
                "digest": saved.digest,
            }
        )

    async def start_replay(request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        ids, prompts = body.get("fixtures"), body.get("prompts", {})
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) for i in ids):
            return _error(400, "fixtures: expected a non-empty list of fixture ids")
        picked = [state.entry(i) for i in ids]
        missing = [i for i, e in zip(ids, picked, strict=True) if e is None]
        if missing:
            return _error(404, f"fixtures: no fixture with id {missing[0]}")
        if not isinstance(prompts, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in prompts.items()
        ):
            return _error(400, "prompts: expected an object of prompt name -> text")
        declared = {p.name for p in state.prompts()}
        unknown = sorted(set(prompts) - declared)
        if unknown:
            return _error(400, f"prompts: the agent declares no prompt {unknown[0]!r}")
        job = state.replayer.submit([e for e in picked if e is not None], prompts)
        return JSONResponse({"job": job.id}, status_code=202)

    async def replay_events(request: Request) -> Response:
        job = state.replayer.get(request.path_params["job"])
        if job is None:
            return _error(404, "no such replay (it may have been dropped: replay again)")
        try:
            after = max(int(request.query_params.get("after", "0")), 0)
            wait = min(max(float(request.query_params.get("wait", "0")), 0.0), _MAX_WAIT)
        except ValueError:
            return _error(400, "after and wait: expected numbers")
        return JSONResponse(await job.wait(after, wait))

    async def replay_diff(request: Request) -> Response:
        job = state.replayer.get(request.path_params["job"])
        replayed = None if job is None else job.replayed.get(request.path_params["fixture"])
        if replayed is None:
            return HTMLResponse("no such replay", status_code=404)
        if (
            replayed.diff is None
            or replayed.recorded is None
            or replayed.result.conversation is None
        ):
            why = replayed.result.error or "no conversation to compare"
            return HTMLResponse(f"nothing to compare: {why}", status_code=422)
        return HTMLResponse(
            render_diff_html(
                replayed.diff,
                replayed.recorded,
                replayed.result.conversation,
                title_a="recorded",
                title_b="replayed with the edited prompts",
            )
        )

    routes = [
        Route("/", index),
        Route("/fixtures/{fixture:int}", fixture_page),
        Route("/fixtures/{fixture:int}/chat", fixture_chat),
        Route("/replays/{job}/{fixture:int}/diff", replay_diff),
        Route("/api/prompts", list_prompts),
        Route("/api/prompts/{name}", save, methods=["POST"]),
        Route("/api/replays", start_replay, methods=["POST"]),
        Route("/api/replays/{job}", replay_events),
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            state.replayer.close()

    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES))],
        lifespan=lifespan,
    )
    app.state.ui = state
    return app
