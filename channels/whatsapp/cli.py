"""``harness serve``: the WhatsApp simulator on its own, with its control API.

The control API plays every user and reads every conversation, and it
shares the fake Graph API's port. Given ``--control-token`` (or
``HARNESS_CONTROL_TOKEN``), it answers only requests bearing that token; on
an address other machines can reach (anything but loopback), it must have
one, so ``--host 0.0.0.0`` alone is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import click

from channels.whatsapp._defaults import SIMULATOR_DEFAULTS
from channels.whatsapp._event_loop import loop_factory, loop_name, loop_option, run_on
from channels.whatsapp._limit_options import limit_options
from channels.whatsapp._retention_options import retention_options
from channels.whatsapp._templates_option import business_templates_option
from channels.whatsapp.model_options import model_endpoint_options
from harness.exceptions import ConfigError
from harness.record_mode import RecordMode

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.faults import FaultProfile
    from channels.whatsapp.retention import RetentionPolicy
    from channels.whatsapp.simulator import WhatsAppSimulator
    from harness.endpoints import Endpoints
    from harness.recording import Recording

__all__ = ["is_loopback", "serve_command", "simulator_options"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Run:
    """What makes this server's ids its own (the seed, if given, and the run id), and its Redis."""

    seed: int | None
    run_id: str
    redis_url: str | None = None
    namespace: str = ""
    routes_url: str | None = None


class _SimulatorDefault(click.Option):
    """An option whose default is the simulator's own setting of the same name.

    The defaults are plain values (:mod:`channels.whatsapp._defaults`), the
    same the settings' model takes: showing them in the help imports no model.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("show_default", True)
        super().__init__(*args, **kwargs)
        if self.name is not None:
            self.default = SIMULATOR_DEFAULTS[self.name]


def simulator_options(command: F) -> F:
    """The options that identify the simulated business number (shared with ``harness run``)."""
    options = [
        click.option(
            "--app-secret",
            cls=_SimulatorDefault,
            help="Secret the webhooks are signed with (X-Hub-Signature-256).",
        ),
        click.option(
            "--verify-token",
            cls=_SimulatorDefault,
            help="Token sent in the verification handshake.",
        ),
        click.option(
            "--access-token",
            cls=_SimulatorDefault,
            help="Bearer token the fake Graph API accepts.",
        ),
        click.option("--phone-number-id", cls=_SimulatorDefault),
        click.option("--waba-id", cls=_SimulatorDefault),
        click.option("--display-phone-number", cls=_SimulatorDefault),
        click.option(
            "--fault-profile",
            default="none",
            show_default=True,
            help="A preset (none, duplicates, flaky, batched, bursty), a .json/.yaml "
            "file, or key=value pairs such as duplicate=0.3,batch=5.",
        ),
        click.option(
            "--seed",
            default=None,
            type=int,
            help="Seed for ids and faults. Without it ids are new in every run (fault dice "
            "use 0); with it they follow from the seed and --run-id.",
        ),
        click.option(
            "--run-id",
            default=None,
            help="Names this run for seeded ids (default: a new one at each start).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--webhook-url",
    default=None,
    help="The agent's webhook; without it, inbound messages can't be delivered.",
)
@click.option(
    "--public-url",
    default=None,
    help="Base URL the agent reaches this server at (default: http://HOST:PORT).",
)
@click.option(
    "--control-token",
    envvar="HARNESS_CONTROL_TOKEN",
    default=None,
    help="Bearer token the control API (/_harness/) requires; needed to serve beyond "
    "loopback. Also read from HARNESS_CONTROL_TOKEN.",
)
@limit_options
@click.option(
    "--model-mode",
    type=click.Choice([mode.value for mode in RecordMode]),
    default=RecordMode.PASSTHROUGH.value,
    show_default=True,
    help="What /v1/messages and /v1/chat/completions do: record, replay or pass through.",
)
@click.option(
    "--model-records",
    type=click.Path(path_type=Path),
    default=None,
    help="The model exchanges to replay, or to record into: a fixture or an llm.jsonl.",
)
@click.option(
    "--redis",
    "redis_url",
    default=None,
    metavar="URL",
    help="Keep the simulator's state in this Redis (redis://, rediss:// or unix://), so "
    "several serve processes behind one address act as one Meta.",
)
@click.option(
    "--routes",
    "routes_url",
    default=None,
    metavar="URL",
    help="The store (redis://) of the harness runs whose Graph APIs play users of their own: "
    "sends for those users are passed on to them (harness run --graph-advertise).",
)
@click.option(
    "--redis-namespace",
    default="harness-serve",
    show_default=True,
    help="The key prefix in Redis: processes with the same one share one Meta.",
)
@loop_option
@model_endpoint_options
@business_templates_option
@simulator_options
@retention_options
def serve_command(
    host: str,
    port: int,
    webhook_url: str | None,
    public_url: str | None,
    control_token: str | None,
    throughput_mps: int,
    rate_limits: bool,
    model_mode: str,
    model_records: Path | None,
    redis_url: str | None,
    routes_url: str | None,
    redis_namespace: str,
    anthropic_upstream: str,
    openai_upstream: str,
    side_effect_tools: tuple[str, ...],
    app_secret: str,
    verify_token: str,
    access_token: str,
    phone_number_id: str,
    waba_id: str,
    display_phone_number: str,
    fault_profile: str,
    seed: int | None,
    run_id: str | None,
    retention: RetentionPolicy,
    loop: str,
    business_templates: tuple[Any, ...] | None,
) -> None:
    """Run the fake Graph API and webhook sender, with a control API under /_harness/.

    It keeps the past within the --keep-* limits (see docs/how-to/serve.md), so it can run for days.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import secrets

    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.faults import FaultProfile
    from channels.whatsapp.model_options import serve_recording
    from harness.exceptions import StoreError
    from harness.store import REDIS_SCHEMES

    token = control_token.strip() if control_token is not None else None
    if control_token is not None and not token:
        raise click.BadParameter("the token is empty", param_hint="--control-token")
    if not token and not is_loopback(host):
        raise click.UsageError(
            f"--host {host} can be reached from other machines, and the control API drives"
            " every user: give --control-token (or HARNESS_CONTROL_TOKEN)"
        )
    factory = loop_factory(loop)
    try:
        faults = FaultProfile.parse(fault_profile)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--fault-profile") from None
    config = SimulatorConfig(
        app_secret=app_secret,
        verify_token=verify_token,
        access_token=access_token,
        phone_number_id=phone_number_id,
        waba_id=waba_id,
        display_phone_number=display_phone_number,
        public_url=public_url or f"http://{host}:{port}",
        throughput_mps=throughput_mps,
        rate_limits=rate_limits,
        templates=business_templates,
    )
    if seed is not None:
        faults = faults.model_copy(update={"seed": seed})
    run = _Run(seed, run_id or secrets.token_hex(6), redis_url, redis_namespace.strip(), routes_url)
    if redis_url is not None and not run.namespace:
        raise click.BadParameter("the namespace is empty", param_hint="--redis-namespace")
    for hint, url in (("--redis", redis_url), ("--routes", routes_url)):
        if url is not None and urlsplit(url).scheme.lower() not in REDIS_SCHEMES:
            raise click.BadParameter(
                "expected a redis://, rediss:// or unix:// URL", param_hint=hint
            )
    recording, close_records = serve_recording(model_mode, model_records)
    model = _Model(recording, anthropic_upstream, openai_upstream, side_effect_tools)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            run_on(
                factory,
                _serve(config, faults, host, port, webhook_url, run, token, model, retention),
            )
    except StoreError as exc:  # Redis does not answer: one line, not a traceback
        raise click.ClickException(str(exc)) from None
    finally:
        close_records()


@dataclass(frozen=True)
class _Model:
    """How the model endpoint and the OTLP receiver are set up."""

    recording: Recording
    anthropic_upstream: str
    openai_upstream: str
    side_effect_tools: tuple[str, ...]

    def endpoints(self, sim: WhatsAppSimulator) -> Endpoints:
        """Both, writing their events into the simulator's trace."""
        from harness.endpoints import Endpoints, Stamp

        return Endpoints.for_recording(
            self.recording,
            sim.record,
            clock=Stamp(sim.clock),
            trace=sim.events,
            anthropic_upstream=self.anthropic_upstream,
            openai_upstream=self.openai_upstream,
            side_effects=self.side_effect_tools,
        )


async def _serve(
    config: SimulatorConfig,
    faults: FaultProfile,
    host: str,
    port: int,
    webhook_url: str | None,
    run: _Run,
    token: str | None,
    model: _Model,
    retention: RetentionPolicy,
) -> None:
    import asyncio

    from channels.whatsapp.control import control_app
    from channels.whatsapp.forwarding import Forwarder, RouteBook
    from channels.whatsapp.ids import id_source
    from channels.whatsapp.server import BackgroundServer
    from channels.whatsapp.simulator import WhatsAppSimulator
    from channels.whatsapp.subscriptions import SwitchTarget
    from channels.whatsapp.url_target import UrlTarget
    from harness._tasks import cancel_until_done
    from harness.clock import VirtualClock
    from harness.store import check_store, open_store

    shared = None
    run_id = run.run_id
    if run.redis_url is not None:
        from channels.whatsapp.shared import open_shared

        shared = await open_shared(run.redis_url, run.namespace, config.phone_number_id)
        run_id = f"{run_id}-{shared.node}"  # seeded ids differ between the processes too
    clock = VirtualClock(shared.start() if shared else datetime.now(UTC).replace(microsecond=0))
    media = None
    if shared is not None:
        rng = id_source(run.seed, run_id, "media")
        media = shared.media_store(clock, config.public_url, rng=rng)
    sim = WhatsAppSimulator(
        config,
        clock=clock,
        store=shared.base if shared else None,
        media=media,
        faults=faults,
        seed=run.seed,
        run_id=run_id,
        retention=retention,
        sink=_say_unanswered_webhook,
    )
    if shared is not None:
        await shared.attach(sim)
    if webhook_url:  # a URL a bot can change, registering its own (channels.whatsapp.subscriptions)
        sim.connect(SwitchTarget(UrlTarget(webhook_url, timeout=config.webhook_timeout)))
    endpoints = model.endpoints(sim)
    app: ASGIApp = endpoints.around(control_app(sim, token=token))
    forwarder = None
    await check_store(run.routes_url)
    routes = open_store(run.routes_url) if run.routes_url is not None else None
    if routes is not None:
        # Sends for the users a harness run plays with a Graph API of its own go to it.
        app = forwarder = Forwarder(app, RouteBook(routes))
    server = BackgroundServer(app, host, port)
    await server.start()
    click.echo(
        f"fake Graph API on {server.url}/{config.api_version}/{config.phone_number_id}/messages"
    )
    guard = " (with a control token)" if token else ""
    click.echo(f"control API on {server.url}/_harness/{guard} (OpenAPI: {server.url}/openapi.json)")
    click.echo(
        f"model endpoint ({model.recording.mode.value}) on {server.url}: ANTHROPIC_BASE_URL="
        f"{server.url}, OPENAI_BASE_URL={server.url}/v1; OTLP traces at {server.url}/v1/traces"
    )
    if webhook_url:
        click.echo(f"delivering webhooks to {webhook_url}")
    click.echo(f"event loop: {loop_name(asyncio.get_running_loop())}")
    if routes is not None:
        click.echo("passing sends for users of harness runs (--routes) on to their Graph APIs")
    if run.seed is not None:
        click.echo(f"ids seeded with --seed {run.seed} --run-id {run_id}")
    if shared is not None:
        click.echo(
            f"state shared in Redis at {shared.base.where} under {run.namespace!r}"
            f" (process {shared.node})"
        )
    loop = asyncio.get_running_loop()
    pacer = loop.create_task(sim.run_paced())
    stopped = asyncio.Event()
    if shared is not None:  # hand what this process holds back to the others before it goes
        import signal

        loop.add_signal_handler(signal.SIGTERM, stopped.set)
    try:
        await stopped.wait()
    finally:
        await cancel_until_done(pacer)
        await server.stop()
        if forwarder is not None:
            await forwarder.aclose()
        if routes is not None:
            await routes.close()
        await endpoints.aclose()
        await sim.aclose()
        if shared is not None:
            await shared.aclose()


def _say_unanswered_webhook(event: object) -> None:
    """Print a line on stderr for each webhook POST the bot did not answer with a 200.

    Driven by hand, a bot that fails its webhook (a 500, a wrong app secret's 401, a timeout)
    otherwise just seems silent: Meta retries, and the control API's answers look as usual.
    """
    from harness.trace import DeliveryAttempt

    if not isinstance(event, DeliveryAttempt) or event.ok:
        return
    answer = (
        f"answered {event.status_code}"
        if event.status_code is not None
        else f"got no answer ({event.error or 'none'})"
    )
    what = ", ".join(event.items) or event.delivery
    click.echo(f"webhook POST of {what} (attempt {event.attempt}) {answer}", err=True)


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` is reachable from this machine only (``127.0.0.1``, ``::1``...)."""
    if host.strip().lower() == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:  # a name other than localhost may resolve anywhere
        return False
