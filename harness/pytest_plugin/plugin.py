"""The pytest plugin the package installs (entry point ``pytest11``, name ``harness``).

It costs a project that does not use it nothing but its options: this
module imports only pytest, and the harness is imported when a fixture is
used or a scenario file is collected.

- ``--harness-scenarios PATH`` (or ``harness_scenarios`` in the ini) collects
  the scenario files under PATH as test items (:mod:`harness.pytest_plugin.items`).
- The ``whatsapp`` fixture (also ``wa``) is a conversation with the agent
  under test (:class:`~harness.pytest_plugin.chat.Chat`); ``whatsapp_app``
  says which agent: override it in ``conftest.py``, or name a target in the
  ini or ``[tool.harness]`` (:mod:`harness.pytest_plugin.settings`).
- ``--harness-record-mode none|once|new|all`` says how tests use their
  recordings (:mod:`harness.pytest_plugin.modes`).
- ``--harness-templates FILE`` (or ``harness_templates`` in the ini) gives the
  business's message templates, as ``harness run --templates`` does; a bad
  file stops the run with one line naming it.
- ``--harness-app-secret``, ``--harness-verify-token``, ``--harness-access-token``,
  ``--harness-phone-number-id`` and ``--harness-waba-id`` (``harness_app_secret``
  ... in the ini) give the number a bot is configured with, and
  ``--harness-anthropic-upstream`` / ``--harness-openai-upstream`` where a bot
  at a URL's model calls go on to, as ``harness run``'s options of those
  names do. A bot at a URL is checked once (:mod:`harness.pytest_plugin.reach`).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:
    from harness.channel import AgentFactory, UserSpec
    from harness.pytest_plugin.chat import Chat
    from harness.pytest_plugin.settings import PluginSettings

__all__ = [
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "whatsapp_users",
]

_ROOTS = pytest.StashKey[tuple[Path, ...]]()
_MARKER = (
    "whatsapp(users=None, faults=None, seed=0, settings=None): how the whatsapp fixture sets up "
    "its conversation: the users (names, or mappings with name, wa_id, bsuid), a fault profile, "
    "a seed and settings for the agent"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``--harness-*`` options and their ini counterparts."""
    group = parser.getgroup("harness", "WhatsApp agents under test (wa-harness)")
    group.addoption(
        "--harness-scenarios",
        action="append",
        default=[],
        metavar="PATH",
        help="Collect the scenario files (*.yaml) under PATH as tests (repeatable).",
    )
    group.addoption(
        "--harness-record-mode",
        default=None,
        metavar="MODE",
        help="none (replay only, the default), once (record what is missing), "
        "new (record new requests too), all (record everything again).",
    )
    group.addoption("--harness-target", default=None, help="The agent's factory, pkg.mod:attr.")
    group.addoption("--harness-target-url", default=None, help="The agent's webhook URL.")
    group.addoption("--harness-channel", default=None, help="whatsapp (default) or direct.")
    group.addoption(
        "--harness-graph-port", default=None, help="The fake Graph API's port, for a URL."
    )
    group.addoption(
        "--harness-templates",
        default=None,
        type=_absolute,
        metavar="FILE",
        help="The business's message templates (a JSON or YAML file, as Meta's GET "
        "message_templates lists them); without it, hello_world and two examples.",
    )
    for name, help_text in {**_NUMBER_HELP, **_UPSTREAM_HELP}.items():
        group.addoption(f"--harness-{name.replace('_', '-')}", default=None, help=help_text)
        parser.addini(f"harness_{name}", help_text, default="")
    parser.addini("harness_scenarios", "Folders or files of scenarios to collect.", type="paths")
    parser.addini("harness_target", "The agent's factory, package.module:attr.", default="")
    parser.addini("harness_target_url", "The agent's webhook URL.", default="")
    parser.addini("harness_channel", "The channel: whatsapp (default) or direct.", default="")
    parser.addini("harness_record_mode", "none, once, new or all (default none).", default="")
    parser.addini("harness_graph_port", "The fake Graph API's port, for a URL.", default="")
    parser.addini(
        "harness_templates",
        "The business's message templates: a JSON or YAML file, as Meta lists them.",
        type="paths",
    )


#: The business number a bot is configured with, as ``harness run --app-secret`` ... take it.
_NUMBER_HELP: Final = {
    "app_secret": "The app secret that signs the webhooks (X-Hub-Signature-256).",
    "verify_token": "The verify token of the verification handshake.",
    "access_token": "The bearer token the fake Graph API accepts.",
    "phone_number_id": "The business number's id.",
    "waba_id": "The WhatsApp Business Account id.",
}
#: Where a bot at a URL's model calls to the harness go on to: each option's help.
_UPSTREAM_HELP: Final = {
    "anthropic_upstream": "With a target URL: where the bot's /v1/messages calls to the "
    "harness go on to (default: Anthropic's API).",
    "openai_upstream": "With a target URL: where the bot's /v1/chat/completions calls to the "
    "harness go on to, with its /v1, as OPENAI_BASE_URL (default: OpenAI's API).",
}


def _absolute(path: str) -> str:
    """A path given on the command line, from the folder pytest was started in."""
    return str(Path(path).absolute()) if path.strip() else path


#: The settings of what the plugin tests, as options (``--harness-target``) and in the ini;
#: scenario folders too, since the scenarios found there are played with the others.
_SETTINGS: Final = (
    "harness_scenarios",
    "harness_target",
    "harness_target_url",
    "harness_channel",
    "harness_record_mode",
    "harness_graph_port",
    "harness_templates",
    *(f"harness_{name}" for name in (*_NUMBER_HELP, *_UPSTREAM_HELP)),
)


def _check_settings(config: pytest.Config) -> None:
    """Stop the run with one line naming the setting, if the settings given are wrong.

    Two settings that both name the agent, a record mode or port that is no
    such thing, a templates file that is missing or wrong: said once, before
    any test runs, rather than as an error under every test that uses the
    plugin. A session given none of the settings reads nothing.
    """
    if not any(config.getoption(name) or config.getini(name) for name in _SETTINGS):
        return
    from harness.exceptions import HarnessError
    from harness.pytest_plugin.settings import check_channel_options, read_settings

    try:
        settings = read_settings(config)
        if settings.templates is not None:
            check_channel_options(settings)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, check the settings given, add the scenario folders to collect."""
    config.addinivalue_line("markers", _MARKER)
    _check_settings(config)
    invoked = config.invocation_params.dir
    from_options = [invoked / p for p in config.getoption("harness_scenarios") or []]
    from_ini = [Path(p) for p in config.getini("harness_scenarios") or []]
    roots = tuple(p.resolve() for p in (*from_options, *from_ini))
    config.stash[_ROOTS] = roots
    if not roots:
        return
    # Named on the command line, they are collected whatever else is; named in the
    # ini, only when no tests were named (as with testpaths).
    explicit = config.args_source is pytest.Config.ArgsSource.ARGS
    wanted = [p.resolve() for p in from_options] + ([] if explicit else list(roots))
    given = [(invoked / arg.split("::")[0]).resolve() for arg in config.args]
    for root in wanted:
        if not any(root == g or root.is_relative_to(g) for g in given):
            config.args.append(str(root))
            given.append(root)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A scenario file under one of the scenario folders (not in a ``fixtures`` folder)."""
    roots = parent.config.stash.get(_ROOTS, ())
    if not roots or file_path.suffix not in (".yaml", ".yml"):
        return None
    where = file_path.resolve()
    for root in roots:
        if where == root or (
            where.is_relative_to(root) and "fixtures" not in where.relative_to(root).parts[:-1]
        ):
            from harness.pytest_plugin.items import ScenarioFile

            return ScenarioFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def harness_settings(pytestconfig: pytest.Config) -> PluginSettings:
    """The agent under test, its channel and the record mode, as configured.

    Settings given to pytest were checked when it started (``_check_settings``);
    a wrong ``[tool.harness]``, read only now, is one line under each test
    that uses it, never a traceback.
    """
    from harness.exceptions import HarnessError
    from harness.pytest_plugin.settings import read_settings

    try:
        return read_settings(pytestconfig)
    except HarnessError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside the except: no "during handling" chain


@pytest.fixture
def whatsapp_app(harness_settings: PluginSettings) -> AgentFactory | None:
    """How to build the agent under test: a function from the ``AgentEnvironment`` to the app.

    Override it in ``conftest.py`` to test your own bot::

        @pytest.fixture
        def whatsapp_app():
            return lambda env: create_app(env.settings, client=env.http_client)

    By default it is the factory named by ``harness_target`` (ini) or
    ``target`` in ``[tool.harness]``; ``None`` when the agent is at a URL.
    """
    from harness.exceptions import HarnessError
    from harness.pytest_plugin.settings import NO_AGENT
    from harness.suites.target import load_target

    if harness_settings.target_url:
        return None
    if not harness_settings.target:
        pytest.fail(NO_AGENT, pytrace=False)
    try:
        return load_target(harness_settings.target, search=harness_settings.import_paths)
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


#: The keywords ``@pytest.mark.whatsapp(...)`` takes.
_MARKER_KEYWORDS: Final = ("faults", "seed", "settings", "users")


def _check_marker(marker: pytest.Mark | None) -> None:
    """Fail the test on a marker keyword the fixture does not read, naming those it does."""
    if marker is None:
        return
    if marker.args:
        pytest.fail(
            f"@pytest.mark.whatsapp takes keywords only ({', '.join(_MARKER_KEYWORDS)}), "
            f"got {marker.args[0]!r}",
            pytrace=False,
        )
    for keyword in sorted(set(marker.kwargs) - set(_MARKER_KEYWORDS)):
        close = difflib.get_close_matches(keyword, _MARKER_KEYWORDS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        pytest.fail(
            f"@pytest.mark.whatsapp: unknown keyword {keyword!r}{hint}; "
            f"it takes {', '.join(_MARKER_KEYWORDS)}",
            pytrace=False,
        )


def _users(marker: pytest.Mark | None) -> list[UserSpec]:
    from harness.channel import UserSpec
    from harness.suites.scenario import DEFAULT_USER

    _check_marker(marker)
    given = (marker.kwargs.get("users") if marker else None) or [DEFAULT_USER.name]
    users: list[UserSpec] = []
    for index, entry in enumerate(given, start=1):
        default_id = f"155512{30000 + index:05d}"
        if isinstance(entry, str):
            users.append(UserSpec(entry, wa_id=default_id))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            wa_id, bsuid = entry.get("wa_id"), entry.get("bsuid")
            users.append(UserSpec(entry["name"], wa_id or (None if bsuid else default_id), bsuid))
        else:
            pytest.fail(
                f"@pytest.mark.whatsapp users[{index - 1}]: expected a name or a mapping with "
                f"name (and wa_id or bsuid), got {entry!r}",
                pytrace=False,
            )
    return users


@pytest.fixture
def whatsapp_users(request: pytest.FixtureRequest) -> list[UserSpec]:
    """The users of the test's conversation (``@pytest.mark.whatsapp(users=[...])``).

    One user named ``user`` by default; users named without a wa_id get
    ``15551230001``, ``15551230002`` ... in order.
    """
    return _users(request.node.get_closest_marker("whatsapp"))


def _check_factory(app: object) -> None:
    """Refuse an ``whatsapp_app`` that is not a factory, saying what to return instead."""
    if not callable(app):
        pytest.fail(f"whatsapp_app returned {app!r}: return a factory (env -> app)", pytrace=False)
    try:
        required = [
            p
            for p in inspect.signature(app).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # no signature to read: trust it
        return
    if len(required) == 3:
        pytest.fail(
            f"whatsapp_app returned an ASGI app ({type(app).__name__}); return a factory that "
            "builds one for each conversation: lambda env: create_app(env.settings, "
            "client=env.http_client)",
            pytrace=False,
        )


@pytest.fixture
def whatsapp(
    request: pytest.FixtureRequest,
    whatsapp_app: AgentFactory | None,
    whatsapp_users: list[UserSpec],
    harness_settings: PluginSettings,
) -> Iterator[Chat]:
    """A conversation with the agent under test over WhatsApp (or the configured channel).

    ``await wa.say(user, "hi")``, ``await wa.tap(user, "confirm")``,
    ``await wa.advance("25h")``, ``wa.replies(user)``, ``wa.trace()``; see
    :class:`~harness.pytest_plugin.chat.Chat`. An in-process agent's model
    and tools replay the test's recording (``recordings/<module>/<test>/``
    beside it), or record it, as ``--harness-record-mode`` says.
    """
    from harness.channel import ChannelSetup
    from harness.plugins import load_channel_plugins
    from harness.pytest_plugin.cassette import Cassette, missing_recording
    from harness.pytest_plugin.chat import Chat
    from harness.pytest_plugin.modes import function_recording, plan_for
    from harness.pytest_plugin.namespaces import url_namespace
    from harness.pytest_plugin.reach import target_problem
    from harness.suites.realtime import distinct_user

    settings = harness_settings
    marker = request.node.get_closest_marker("whatsapp")
    _check_marker(marker)
    options: dict[str, Any] = dict(marker.kwargs) if marker else {}
    users = list(whatsapp_users)
    plugins = load_channel_plugins()
    if settings.channel not in plugins:
        pytest.fail(f"harness channel {settings.channel!r} is not installed", pytrace=False)
    cassette = None
    channel_options: dict[str, Any] = {}
    namespace = ""
    if whatsapp_app is not None:
        _check_factory(whatsapp_app)
        where = function_recording(request.path, request.node.name)
        plan = plan_for(settings.record_mode, (where / "meta.json").is_file())
        if plan == "missing":
            pytest.fail(missing_recording(where), pytrace=False)
        agent = getattr(whatsapp_app, "__qualname__", type(whatsapp_app).__name__)
        cassette = Cassette(
            where, plan, name=request.node.nodeid, channel=settings.channel, agent=agent
        )
    else:
        # Numbers and message ids of the test's own: the agent at the URL remembers both.
        problem = target_problem(request.config, settings)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        namespace = url_namespace(request.config, request.node.nodeid)
        users = [distinct_user(u, namespace) for u in users]
        url = f"http://127.0.0.1:{settings.graph_port}"
        channel_options = {"graph_url": url, "serve_graph": True}
    seed = int(options.get("seed", 0) or 0)
    setup = ChannelSetup(
        users=users,
        seed=seed,
        faults=options.get("faults"),
        agent_factory=whatsapp_app,
        target_url=None if whatsapp_app is not None else settings.target_url,
        agent_settings={str(k): str(v) for k, v in (options.get("settings") or {}).items()},
        namespace=namespace,
        options={**settings.channel_options, **channel_options},
        recording=cassette.recording if cassette is not None else None,
    )
    plugin = plugins[settings.channel]
    chat = Chat(lambda: plugin.factory(setup), users, watch_agent=whatsapp_app is not None)
    try:
        yield chat
    finally:
        broke = chat.close()
        if cassette is not None:
            cassette.save(chat.trace(), seed=seed)
    if cassette is not None and cassette.divergences():
        pytest.fail("\n".join(["the replay diverged:", *cassette.divergences()]), pytrace=False)
    if broke:
        pytest.fail(f"the agent failed in the background: {broke}", pytrace=False)


@pytest.fixture
def wa(whatsapp: Chat) -> Chat:
    """The ``whatsapp`` fixture, under a shorter name."""
    return whatsapp
