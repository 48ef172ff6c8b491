"""Scenario files as pytest items: one item per scenario, played against the agent under test.

A scenario file collected by the plugin becomes a :class:`ScenarioFile`
holding one :class:`ScenarioItem`, whose id is the file and the scenario's
name (``scenarios/booking/burst.yaml::a three-message burst is answered
once``), so ``-k``, ``--lf``, ``-x`` and ``-n`` treat it as any other test.
The item is a pytest function item, so it uses the project's fixtures: the
agent comes from the ``whatsapp_app`` fixture, as for the ``whatsapp``
fixture. It plays the scenario as ``harness run`` does, with the agent's
model and tools replaying or recording the scenario's fixture
(``fixtures/<stem>/`` beside the file) as the record mode says. A failure
reads as the scenario, the turn, the rule and the messages involved, with
the YAML that reproduces it; never a traceback.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.channel import AgentFactory
from harness.exceptions import ConfigError, HarnessError, ScenarioError
from harness.fixture import LOG_FILES, META_FILE, load_fixture
from harness.pytest_plugin.cassette import missing_recording
from harness.pytest_plugin.loop import LoopThread
from harness.pytest_plugin.modes import plan_for, scenario_recording
from harness.pytest_plugin.namespaces import url_namespace
from harness.pytest_plugin.reach import target_problem
from harness.pytest_plugin.render import render_result
from harness.pytest_plugin.settings import PluginSettings
from harness.recording import Recording
from harness.records import LLMRecord, ToolRecord
from harness.replay.record import record_scenario
from harness.results import ScenarioResult
from harness.suites.preflight import bind_invariants
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, load_scenario
from harness.tape import RecordMode

__all__ = ["ScenarioFailed", "ScenarioFile", "ScenarioItem", "play_scenario"]


class ScenarioFailed(Exception):
    """A scenario that did not pass; :meth:`ScenarioItem.repr_failure` prints its report."""

    def __init__(self, report: str) -> None:
        super().__init__(report)
        self.report = report


class ScenarioFile(pytest.File):
    """A scenario file: it holds one scenario, so one item."""

    def collect(self) -> Iterator[ScenarioItem]:
        """The file's scenario, as one item named after it; a bad file is one line."""
        try:
            scenario = load_scenario(self.path)
        except HarnessError as exc:
            raise self.CollectError(str(exc)) from None
        yield ScenarioItem.from_parent(
            self, name=scenario.name, callobj=play_scenario, scenario=scenario
        )


class ScenarioItem(pytest.Function):
    """One scenario, run as a test; it fails with the scenario's own report."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        # -k matches the scenario's tags as well as its file and name.
        self.extra_keyword_matches.update(scenario.tags)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]  # pytest's own is typed for its traceback styles
        """A scenario's report instead of a traceback; anything else as pytest shows it."""
        if isinstance(excinfo.value, ScenarioFailed):
            return excinfo.value.report
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the scenario is: its file and the scenario's name."""
        return self.path, None, f"scenario: {self.name}"


def play_scenario(
    request: pytest.FixtureRequest,
    whatsapp_app: AgentFactory | None,
    harness_settings: PluginSettings,
) -> None:
    """Play the item's scenario against the agent; raise :class:`ScenarioFailed` if it fails."""
    node = request.node
    assert isinstance(node, ScenarioItem)  # the only item that calls this
    scenario = node.scenario
    settings = harness_settings
    if whatsapp_app is None and not settings.target_url:
        pytest.fail("whatsapp_app returned None and no target URL is set", pytrace=False)
    channel_options: dict[str, object] = dict(settings.channel_options)
    # At a URL the scenario plays numbers and message ids of its own, as in harness run.
    namespace = ""
    if whatsapp_app is None:
        url = f"http://127.0.0.1:{settings.graph_port}"
        channel_options.update(graph_url=url, serve_graph=True)
        namespace = url_namespace(request.config, node.nodeid)
        problem = target_problem(request.config, settings)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
    runner = Runner(
        RunOptions(
            channel=settings.channel,
            target_url=settings.target_url if whatsapp_app is None else None,
            import_paths=settings.import_paths,
            channel_options=channel_options,
        ),
        factory=whatsapp_app,
    )
    try:
        # What is wrong with the scenario itself (an unknown invariant, a bad parameter, a
        # fault or setting the channel or agent does not know) is said before any recording is
        # looked for: recording it would not help.
        bind_invariants(scenario)
        runner.check([scenario])
        with LoopThread("harness-scenario") as loop:
            result, divergences = loop.run(_play(runner, scenario, settings, namespace=namespace))
    except (ScenarioError, ConfigError) as exc:
        pytest.fail(str(exc), pytrace=False)
    if result.status in ("passed", "skipped") and not divergences:
        if result.status == "skipped":
            reason = result.skipped[0].reason if result.skipped else "not played"
            pytest.skip(reason)
        return
    shown = Path(result.path)
    invoked = request.config.invocation_params.dir
    if shown.is_absolute() and shown.is_relative_to(invoked):
        result = result.model_copy(update={"path": shown.relative_to(invoked).as_posix()})
    raise ScenarioFailed(render_result(result, divergences))


async def _play(
    runner: Runner, scenario: Scenario, settings: PluginSettings, *, namespace: str
) -> tuple[ScenarioResult, list[str]]:
    """Run the scenario with its recording as the mode says; the result, and how it diverged.

    ``namespace`` is the scenario's own against an agent at a URL, which
    answers live; in process it is empty. Each divergence is a line naming
    the recording and the request that left it (one the result's error
    already tells is not repeated).
    """
    if runner.options.target_url is not None:
        return await runner.run_scenario(scenario, namespace=namespace), []
    if scenario.path is None:
        return await runner.run_scenario(scenario), []
    where = scenario_recording(scenario.path)
    plan = plan_for(settings.record_mode, (where / META_FILE).is_file())
    if plan == "missing":
        raise ScenarioFailed(
            f"scenario {scenario.name!r} ({scenario.path})\n{missing_recording(where)}"
        )
    if plan == "record":
        return await record_scenario(runner, scenario, where, overwrite=True), []
    fixture = load_fixture(where)
    llm, tools = fixture.records("llm", LLMRecord), fixture.records("tools", ToolRecord)
    if plan == "extend":
        return await _extend(runner, scenario, where, llm, tools), []
    users = fixture.records("users", LLMRecord)  # a simulated user's own stream
    recording = Recording(
        mode=RecordMode.REPLAY, llm_records=llm, tool_records=tools, user_llm_records=users
    )
    result = await runner.run_scenario(scenario, recording=recording)
    divergences = [
        f"✗ replay diverged from {where}: {str(error).removeprefix('replay diverged: ')}"
        for error in recording.divergences
        if str(error) not in (result.error or "")
    ]
    return result, divergences


async def _extend(
    runner: Runner,
    scenario: Scenario,
    where: Path,
    llm: Sequence[LLMRecord],
    tools: Sequence[ToolRecord],
) -> ScenarioResult:
    """Replay what is recorded, record what is not, and keep the fixture only if it grew."""
    spare = Path(tempfile.mkdtemp(prefix=f".{where.name}-", dir=where.parent))
    try:
        result = await record_scenario(
            runner, scenario, spare, overwrite=True, recorded=(llm, tools)
        )
        await asyncio.to_thread(_keep_if_grew, spare, where, len(llm), len(tools))
        return result
    finally:
        shutil.rmtree(spare, ignore_errors=True)


def _keep_if_grew(spare: Path, where: Path, llm: int, tools: int) -> None:
    """Put the new recording ``spare`` in place of ``where`` if it holds more records."""
    if _lines(spare / LOG_FILES["llm"]) > llm or _lines(spare / LOG_FILES["tools"]) > tools:
        shutil.rmtree(where)
        spare.rename(where)


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.is_file() else 0
