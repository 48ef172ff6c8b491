"""What the plugin tests, from the command line, the pytest ini file and ``[tool.harness]``.

Each setting is taken from the first place that gives it: a ``--harness-*``
option, then the ini file (``harness_target``, ``harness_target_url``,
``harness_channel``, ``harness_record_mode``, ``harness_templates``), then the
project's ``[tool.harness]`` table (:mod:`harness.project`), found from
pytest's root folder. The business number a bot is configured with
(``harness_app_secret``, ``harness_verify_token``, ``harness_access_token``,
``harness_phone_number_id``, ``harness_waba_id``) and where a bot at a URL's
model calls go on to (``harness_anthropic_upstream``,
``harness_openai_upstream``) come from an option or the ini, as
``harness run --app-secret`` ... take them. Scenario files are collected only where
``--harness-scenarios`` or the ini's ``harness_scenarios`` say: a project that
names none pays nothing. A templates file named on the command line is found
from the folder pytest was started in; in the ini, from the ini file's folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from harness.exceptions import ConfigError
from harness.project import find_project
from harness.pytest_plugin.modes import RecordingMode

__all__ = [
    "NO_AGENT",
    "NUMBER_SETTINGS",
    "UPSTREAM_SETTINGS",
    "PluginSettings",
    "PytestConfig",
    "check_channel_options",
    "read_settings",
]

#: What a test says when nothing names the agent under test.
NO_AGENT = (
    "no agent to test: override the whatsapp_app fixture in conftest.py (return a factory: "
    "lambda env: create_app(env.settings, client=env.http_client)), or set harness_target "
    '(or harness_target_url) in the pytest ini, or target = "package.module:factory" under '
    "[tool.harness] in pyproject.toml"
)


#: The business number a bot is configured with, as ``harness run`` takes it (``--app-secret``
#: ...): the channel options, each also ``harness_<name>`` in the ini and
#: ``--harness-<name>`` on the command line.
NUMBER_SETTINGS: Final = (
    "app_secret",
    "verify_token",
    "access_token",
    "phone_number_id",
    "waba_id",
)

#: Where a bot at a URL's model calls, sent to the harness, go on to (the real APIs unless
#: given), as ``harness run --anthropic-upstream`` ... take them.
UPSTREAM_SETTINGS: Final = ("anthropic_upstream", "openai_upstream")


class PytestConfig(Protocol):
    """The part of ``pytest.Config`` the settings are read from."""

    @property
    def rootpath(self) -> Path:
        """pytest's root folder."""
        ...

    def getoption(self, name: str) -> object:
        """A command-line option's value."""
        ...

    def getini(self, name: str) -> object:
        """An ini option's value."""
        ...


@dataclass(frozen=True)
class PluginSettings:
    """The agent under test, its channel, and how recordings are used."""

    target: str | None = None
    target_url: str | None = None
    channel: str = "whatsapp"
    record_mode: RecordingMode = RecordingMode.NONE
    #: Where the fake Graph API listens for an agent at a URL.
    graph_port: int = 8000
    #: Where the target's module may be imported from (the project's folder).
    import_paths: tuple[str, ...] = ()
    #: Where the agent came from, for messages.
    source: str = ""
    #: The business's message templates: a JSON or YAML file, as Meta lists them.
    templates: Path | None = None
    #: The business number the bot is configured with (:data:`NUMBER_SETTINGS` given).
    number: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Where a bot at a URL's model calls go on to (:data:`UPSTREAM_SETTINGS` given).
    upstreams: Mapping[str, str] = field(default_factory=dict)

    @property
    def channel_options(self) -> Mapping[str, Any]:
        """What the channel is given for every test and scenario: templates, number, upstreams."""
        templates = {} if self.templates is None else {"templates": str(self.templates)}
        return {**templates, **self.number, **self.upstreams}


def check_channel_options(settings: PluginSettings) -> None:
    """Raise a one-line :class:`ConfigError` if the channel refuses its options.

    A templates file that is missing or wrong is named with its line and
    field; a channel that is not installed is left for the tests to report.
    """
    from harness.plugins import load_channel_plugins

    plugin = load_channel_plugins().get(settings.channel)
    if plugin is None or plugin.check_options is None:
        return
    try:
        plugin.check_options(settings.channel_options)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _text(config: PytestConfig, option: str, ini: str) -> tuple[str | None, str]:
    given = config.getoption(option)
    if isinstance(given, str) and given.strip():
        return given.strip(), f"--{option.replace('_', '-')}"
    value = config.getini(ini)
    if isinstance(value, str) and value.strip():
        return value.strip(), f"{ini} in the pytest ini"
    return None, ""


def _templates(config: PytestConfig) -> Path | None:
    given = config.getoption("harness_templates")
    if isinstance(given, str) and given.strip():
        return Path(given)
    files = config.getini("harness_templates")
    if not isinstance(files, list) or not files:
        return None
    if len(files) > 1:
        raise ConfigError(f"harness_templates in the pytest ini names {len(files)} files: name one")
    return Path(files[0])


def read_settings(config: PytestConfig) -> PluginSettings:
    """The settings in force, for the tests and scenario files of this session."""
    target, source = _text(config, "harness_target", "harness_target")
    target_url, url_source = _text(config, "harness_target_url", "harness_target_url")
    channel, _ = _text(config, "harness_channel", "harness_channel")
    mode, mode_source = _text(config, "harness_record_mode", "harness_record_mode")
    port, _ = _text(config, "harness_graph_port", "harness_graph_port")
    project = find_project(config.rootpath)
    if target and target_url:
        raise ConfigError(f"{source} and {url_source} both name the agent: keep one")
    if not target and not target_url:
        target, target_url = project.target, project.target_url
        source = str(project.file) if project.file is not None else ""
    else:
        source = source or url_source
    if port is not None and not port.isdigit():
        raise ConfigError(f"harness_graph_port {port!r}: expected a port number")
    number = {}
    for name in NUMBER_SETTINGS:
        value, _ = _text(config, f"harness_{name}", f"harness_{name}")
        if value is not None:
            number[name] = value
    return PluginSettings(
        target=target,
        target_url=target_url,
        channel=channel or project.channel or "whatsapp",
        record_mode=RecordingMode.parse(mode, where=mode_source) if mode else RecordingMode.NONE,
        graph_port=int(port) if port else 8000,
        import_paths=(str(project.root),) if project.root is not None else (),
        source=source,
        templates=_templates(config),
        number=number,
        upstreams=_upstreams(config, target_url),
    )


def _upstreams(config: PytestConfig, target_url: str | None) -> dict[str, str]:
    """Where a bot at ``target_url`` sends its model calls on to, as given; checked.

    One given without a target URL is an error (an agent in process calls its
    model itself), as is one that is not an http(s) URL.
    """
    given: dict[str, str] = {}
    for name in UPSTREAM_SETTINGS:
        url, where = _text(config, f"harness_{name}", f"harness_{name}")
        if url is None:
            continue
        if target_url is None:
            raise ConfigError(
                f"{where} needs harness_target_url (an agent in process calls its model itself)"
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where} {url!r}: expected an http:// or https:// URL")
        given[name] = url
    return given
