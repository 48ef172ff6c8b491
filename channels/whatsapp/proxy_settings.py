"""What ``harness proxy`` is told: where the agent and the Graph API are, and how to record.

Every value is checked when the settings are made, so a bad one stops the
proxy with a one-line ``ConfigError`` before anything listens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from harness.endpoints import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM
from harness.exceptions import ConfigError

__all__ = ["META_GRAPH_URL", "ProxySettings"]

META_GRAPH_URL: Final = "https://graph.facebook.com"
_MIN_KEY: Final = 16


def _check_url(option: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{option}: expected an http:// or https:// URL with a host, not {url!r}")


@dataclass(frozen=True)
class ProxySettings:
    """What ``harness proxy`` is told; a bad value raises a one-line ``ConfigError``.

    ``agent_url`` is the agent's webhook URL; ``upstream_graph`` the Graph
    API the agent's calls go on to. ``pseudonymize_key`` turns pseudonyms
    on. The business's ids, when not given, are learned from the first
    webhook. ``agent_settings`` and ``target`` go into ``meta.json`` for
    replays (secrets among them are redacted). ``anthropic_upstream`` and
    ``openai_upstream`` are where the model calls the agent sends to the
    proxy's model endpoint go on to; ``side_effect_tools`` names the tools
    with side effects among those its OpenTelemetry spans report.
    """

    agent_url: str
    app_secret: str
    verify_token: str
    out: Path
    upstream_graph: str = META_GRAPH_URL
    fixture_id: str | None = None
    pseudonymize_key: str | None = None
    public_url: str | None = None
    phone_number_id: str | None = None
    waba_id: str | None = None
    display_phone_number: str | None = None
    agent_settings: Mapping[str, str] = field(default_factory=dict)
    target: str | None = None
    agent_timeout: float = 10.0
    upstream_timeout: float = 30.0
    overwrite: bool = False
    fsync: bool = False
    anthropic_upstream: str = ANTHROPIC_UPSTREAM
    openai_upstream: str = OPENAI_UPSTREAM
    side_effect_tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_url("--agent-url", self.agent_url)
        _check_url("--upstream-graph", self.upstream_graph)
        _check_url("--anthropic-upstream", self.anthropic_upstream)
        _check_url("--openai-upstream", self.openai_upstream)
        if self.public_url is not None:
            _check_url("--public-url", self.public_url)
        for option, value in (
            ("--app-secret", self.app_secret),
            ("--verify-token", self.verify_token),
        ):
            if not value:
                raise ConfigError(f"{option}: must not be empty")
        if self.pseudonymize_key is not None and len(self.pseudonymize_key) < _MIN_KEY:
            # A short key could be guessed, and the pseudonyms computed back with it.
            raise ConfigError(f"--pseudonymize-key: use at least {_MIN_KEY} characters")
        if self.agent_timeout <= 0 or self.upstream_timeout <= 0:
            raise ConfigError("--agent-timeout: must be a positive number of seconds")
        if self.target is not None and ":" not in self.target:
            raise ConfigError(f"--target: expected package.module:attr, not {self.target!r}")

    @property
    def name(self) -> str:
        """The fixture id: the one given, else the fixture directory's name."""
        return self.fixture_id or self.out.resolve().name
