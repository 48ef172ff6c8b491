"""``harness proxy``: record a live WhatsApp chat into a fixture, between Meta and the agent.

Give Meta ``http(s)://<this host>/webhook`` as the callback URL and the agent
this proxy's address as its Graph API base URL. SIGINT or SIGTERM stops it
cleanly (``conversation.json`` written); a crash keeps every event recorded
up to the one in flight. Secrets can come from the environment
(``WHATSAPP_APP_SECRET``, ``WHATSAPP_VERIFY_TOKEN``, ``HARNESS_PSEUDONYMIZE_KEY``)
rather than the command line, where other users of the machine can see them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from channels.whatsapp.model_options import model_endpoint_options
from channels.whatsapp.proxy_settings import META_GRAPH_URL, ProxySettings
from harness.exceptions import ConfigError, HarnessError
from harness.options import parse_settings

if TYPE_CHECKING:
    import socket

    import uvicorn

    from channels.whatsapp.proxy_record import ProxyRecorder
    from harness.store import Store

__all__ = ["parse_listen", "proxy_command", "proxy_main", "serve_proxy"]


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8080`` for IPv6) as a host and a port number."""
    host, sep, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen: expected HOST:PORT such as 127.0.0.1:8080, not {value!r}")
    return host, int(port)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now, so a taken port is a one-line error."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
    return sock


async def serve_proxy(
    settings: ProxySettings,
    sock: socket.socket,
    *,
    store: Store | None = None,
    ready: Callable[[str], None] | None = None,
) -> ProxyRecorder:
    """Serve the proxy on a bound socket until SIGINT or SIGTERM; returns the closed recorder.

    The fixture is closed (``conversation.json`` written) however serving
    ends. ``ready`` is told the proxy's URL once it listens.
    """
    import asyncio
    import signal

    import uvicorn

    from channels.whatsapp.proxy import create_proxy_app
    from channels.whatsapp.proxy_collector import RecordingCollector
    from channels.whatsapp.proxy_record import ProxyRecorder

    try:
        recorder = ProxyRecorder(settings)
    except BaseException:
        sock.close()
        raise
    collector = RecordingCollector(store, settings.name) if store is not None else None
    app = create_proxy_app(settings, recorder, collector=collector)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)

    def stop(signum: int, frame: FrameType | None) -> None:
        server.should_exit = True

    # Uvicorn handles the signals while it serves, then raises them again: this
    # handler takes them then, so the fixture is closed instead of the process killed.
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        if ready is not None:
            loop = asyncio.get_running_loop()
            loop.call_later(0.0, _when_started, server, ready, f"http://{shown}:{port}")
        await server.serve(sockets=[sock])
    finally:
        recorder.close()
        if store is not None:
            await store.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return recorder


def _when_started(server: uvicorn.Server, ready: Callable[[str], None], url: str) -> None:
    import asyncio

    if server.started:
        ready(url)
    elif not server.should_exit:
        asyncio.get_running_loop().call_later(0.02, _when_started, server, ready, url)


@click.command("proxy")
@click.option(
    "--listen",
    default="127.0.0.1:8080",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to listen: Meta's webhooks at /webhook, the agent's Graph API calls elsewhere.",
)
@click.option("--agent-url", required=True, help="The agent's webhook URL.")
@click.option(
    "--app-secret",
    envvar="WHATSAPP_APP_SECRET",
    required=True,
    help="The app secret Meta signs webhooks with [env: WHATSAPP_APP_SECRET].",
)
@click.option(
    "--verify-token",
    envvar="WHATSAPP_VERIFY_TOKEN",
    required=True,
    help="The verify token of Meta's handshake [env: WHATSAPP_VERIFY_TOKEN].",
)
@click.option(
    "--upstream-graph",
    default=META_GRAPH_URL,
    show_default=True,
    help="The Graph API the agent's calls are forwarded to.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The fixture directory to write.",
)
@click.option("--overwrite", is_flag=True, help="Replace a fixture already in --out.")
@click.option(
    "--pseudonymize",
    is_flag=True,
    help="Replace users' numbers, ids and names by keyed pseudonyms in everything written.",
)
@click.option(
    "--pseudonymize-key",
    envvar="HARNESS_PSEUDONYMIZE_KEY",
    default=None,
    help="The pseudonym key (implies --pseudonymize; default: a random key, printed once) "
    "[env: HARNESS_PSEUDONYMIZE_KEY].",
)
@click.option(
    "--fixture-id",
    default=None,
    help="The recording's id, shared with an agent publishing its model and tool calls "
    "(default: the name of --out).",
)
@click.option(
    "--store",
    "store_url",
    default=None,
    metavar="URL",
    help="A redis:// store the agent publishes its model and tool recordings to.",
)
@click.option("--phone-number-id", default=None, help="Default: learned from the first webhook.")
@click.option("--waba-id", default=None, help="Default: learned from the first webhook.")
@click.option("--display-phone-number", default=None, help="Default: learned from the webhooks.")
@click.option(
    "--agent-setting",
    "agent_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="An agent setting replays should use (written to meta.json).",
)
@click.option("--target", default=None, help="The agent's factory for replays, pkg.module:attr.")
@click.option("--public-url", default=None, help="Where the agent reaches the proxy.")
@click.option(
    "--agent-timeout",
    default=10.0,
    show_default=True,
    type=float,
    help="Seconds the agent has to answer a webhook.",
)
@click.option("--fsync", is_flag=True, help="Force every event to disk (survives a power cut).")
@model_endpoint_options
def proxy_command(
    listen: str,
    agent_url: str,
    app_secret: str,
    verify_token: str,
    upstream_graph: str,
    out: Path,
    overwrite: bool,
    pseudonymize: bool,
    pseudonymize_key: str | None,
    fixture_id: str | None,
    store_url: str | None,
    phone_number_id: str | None,
    waba_id: str | None,
    display_phone_number: str | None,
    agent_settings: tuple[str, ...],
    target: str | None,
    public_url: str | None,
    agent_timeout: float,
    fsync: bool,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...],
) -> None:
    """Record a live chat: forward Meta's webhooks to the agent and its Graph API calls upstream."""
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import asyncio

    from channels.whatsapp.proxy import WEBHOOK_PATH
    from channels.whatsapp.pseudonyms import new_pseudonym_key
    from harness.fixture import META_FILE
    from harness.store import open_store

    host, port = parse_listen(listen)
    if store_url is not None and not store_url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"--store: expected a redis:// URL the agent shares, not {store_url!r}")
    key = pseudonymize_key
    if pseudonymize and key is None:
        key = new_pseudonym_key()
    settings = ProxySettings(
        agent_url=agent_url,
        app_secret=app_secret,
        verify_token=verify_token,
        out=out,
        upstream_graph=upstream_graph,
        fixture_id=fixture_id,
        pseudonymize_key=key,
        public_url=public_url,
        phone_number_id=phone_number_id,
        waba_id=waba_id,
        display_phone_number=display_phone_number,
        agent_settings=parse_settings(agent_settings, "--agent-setting"),
        target=target,
        agent_timeout=agent_timeout,
        overwrite=overwrite,
        fsync=fsync,
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
        side_effect_tools=side_effect_tools,
    )
    _refuse_loops(settings, host, port)
    if (out / META_FILE).exists() and not overwrite:
        raise ConfigError(f"--out: {out} already holds a fixture; pass --overwrite to replace it")
    sock = _bind(host, port)
    store = open_store(store_url) if store_url is not None else None
    if key is not None and pseudonymize_key is None:
        click.echo(f"pseudonym key (printed once, stored nowhere): {key}", err=True)

    def ready(url: str) -> None:
        click.echo(f"proxy on {url}: Meta's webhooks at {url}{WEBHOOK_PATH} -> {agent_url}")
        click.echo(f"the agent's Graph API calls -> {upstream_graph}; recording into {out}")
        click.echo(
            f"model calls: ANTHROPIC_BASE_URL={url} -> {anthropic_upstream}, "
            f"OPENAI_BASE_URL={url}/v1 -> {openai_upstream}; OTLP traces at {url}/v1/traces"
        )

    recorder = asyncio.run(serve_proxy(settings, sock, store=store, ready=ready))
    click.echo(f"stopped: {len(recorder.events)} events recorded in {out}")


def _refuse_loops(settings: ProxySettings, host: str, port: int) -> None:
    """An agent or upstream URL that is the proxy itself would forward to itself forever."""
    local = {host, "127.0.0.1", "localhost", "::1"} if host in ("0.0.0.0", "::") else {host}
    for option, url in (
        ("--agent-url", settings.agent_url),
        ("--upstream-graph", settings.upstream_graph),
    ):
        parts = urlsplit(url)
        target_port = parts.port or (443 if parts.scheme == "https" else 80)
        if parts.hostname in local and target_port == port:
            raise ConfigError(f"{option}: {url} is the proxy itself")


def proxy_main(argv: list[str] | None = None) -> None:
    """Run the command on its own (``python -m channels.whatsapp.proxy_cli``), as ``harness`` would.

    Errors are one line; exit codes follow the harness: 2 for bad input.
    """
    try:
        proxy_command.main(args=argv, prog_name="harness proxy", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(1)
    except HarnessError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    proxy_main()
