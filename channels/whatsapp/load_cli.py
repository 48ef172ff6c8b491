"""``harness load``: many simulated users chatting at once with an agent at a URL.

The users' words come from scenario files (their ``say`` and ``tap`` steps;
by default the project's scenarios). The agent's Graph API must point at the
fake one this command serves (``--graph-host``/``--graph-port``), as for
``harness run --target-url``; it applies Meta's rules (the 24-hour window,
the throughput and pair rate limits) and sends status webhooks, unless told
not to. Exit codes: 0 no reply lost or duplicated and no error (a send Meta's
rules refused is one), 1 otherwise, 2 bad input. The run's machinery is imported when the
command runs, so ``harness --help`` stays quick.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from channels.whatsapp._event_loop import loop_factory, loop_option, run_on
from channels.whatsapp._limit_options import limit_options
from channels.whatsapp._templates_option import business_templates_option
from harness.exceptions import ConfigError

if TYPE_CHECKING:
    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.load import LoadPlan, LoadResult, LoadStats

__all__ = ["load_command"]

#: Where scenarios are read from when neither --scenario nor the project names any.
_DEFAULT_SUITE = Path("scenarios")
# The identity options default to the simulator's settings, read when the command runs (not
# for its help, which would import the settings' models).
_SERVES = " (default: the same as harness serve's)"


def _seconds(text: str, option: str) -> float:
    from harness.durations import parse_duration

    try:
        seconds = parse_duration(text).total_seconds()
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None
    return seconds


@click.command("load")
@click.option("--target-url", required=True, help="The agent's webhook URL.")
@click.option(
    "--users", default=10, show_default=True, type=int, help="Simulated users chatting at once."
)
@click.option(
    "--rate",
    default=10.0,
    show_default=True,
    type=float,
    help="User messages per second, over all users (an upper bound).",
)
@click.option(
    "--duration", default="30s", show_default=True, help="How long users keep writing (30s, 5m)."
)
@click.option(
    "--max-messages",
    default=100_000,
    show_default=True,
    type=int,
    help="Stop after this many user messages, whatever the duration.",
)
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A scenario file or folder whose say/tap steps users play (repeatable; default: "
    "the project's paths, else ./scenarios).",
)
@click.option(
    "--reply-timeout",
    default="10s",
    show_default=True,
    help="A turn with no reply within this is counted lost.",
)
@click.option(
    "--think",
    default="1s",
    show_default=True,
    help="A user's pause after a reply before its next turn.",
)
@click.option(
    "--connections",
    default=100,
    show_default=True,
    type=int,
    help="Webhook connections open at once.",
)
@click.option(
    "--webhook-timeout",
    default="10s",
    show_default=True,
    help="How long a webhook POST may wait to connect, or for the agent's answer.",
)
@click.option(
    "--first-wa-id",
    default=15550000000,
    show_default=True,
    type=int,
    help="The first user's WhatsApp number; the others follow it (one each).",
)
@limit_options
@click.option(
    "--statuses/--no-statuses",
    default=True,
    show_default=True,
    help="Send the agent sent, delivered and read status webhooks for each accepted send.",
)
@click.option(
    "--graph-host", default="127.0.0.1", show_default=True, help="Where the fake Graph API listens."
)
@click.option("--graph-port", default=8000, show_default=True, type=int, help="Its port.")
@business_templates_option
@click.option("--json", "json_out", type=click.Path(path_type=Path), help="Write the JSON report.")
@click.option("--html", "html_out", type=click.Path(path_type=Path), help="Write the HTML report.")
@click.option("--app-secret", help=f"Secret the webhooks are signed with{_SERVES}.")
@click.option("--verify-token", help=f"Token of the verification handshake{_SERVES}.")
@click.option("--access-token", help=f"Bearer token the Graph API accepts{_SERVES}.")
@click.option("--phone-number-id", help=f"The business number's id{_SERVES}.")
@click.option("--waba-id", help=f"The business account's id{_SERVES}.")
@click.option("--display-phone-number", help=f"The business number{_SERVES}.")
@loop_option
def load_command(
    target_url: str,
    users: int,
    rate: float,
    duration: str,
    max_messages: int,
    scenarios: tuple[Path, ...],
    reply_timeout: str,
    think: str,
    connections: int,
    webhook_timeout: str,
    first_wa_id: int,
    throughput_mps: int,
    rate_limits: bool,
    statuses: bool,
    graph_host: str,
    graph_port: int,
    business_templates: tuple[Any, ...] | None,
    json_out: Path | None,
    html_out: Path | None,
    loop: str,
    **identity: str | None,
) -> None:
    """Play many users at once against a live webhook; report reply latency and losses."""
    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.load import LoadPlan, templates_from
    from harness.project import find_project
    from harness.suites.scenario import load_scenarios

    factory = loop_factory(loop)
    paths = list(scenarios) or list(find_project().paths) or [_DEFAULT_SUITE]
    for path in paths:
        if not path.exists():
            raise click.BadParameter(f"{path}: no such file or folder", param_hint="--scenario")
    templates = templates_from(load_scenarios(paths))
    plan = LoadPlan(
        target_url=target_url,
        templates=tuple(templates),
        users=users,
        rate=rate,
        duration=_seconds(duration, "--duration"),
        max_messages=max_messages,
        reply_timeout=_seconds(reply_timeout, "--reply-timeout"),
        think=_seconds(think, "--think"),
        connections=connections,
        webhook_timeout=_seconds(webhook_timeout, "--webhook-timeout"),
        first_wa_id=first_wa_id,
        statuses=statuses,
    )
    given: dict[str, object] = {k: v for k, v in identity.items() if v is not None}
    if business_templates is not None:
        given["templates"] = business_templates
    config = SimulatorConfig.model_validate(
        {
            **given,
            "public_url": f"http://{graph_host}:{graph_port}",
            "throughput_mps": throughput_mps,
            "rate_limits": rate_limits,
        }
    )
    result = run_on(factory, _run(plan, config, graph_host, graph_port))
    _print_summary(result)
    if json_out is not None:
        from channels.whatsapp.load import write_load_json

        click.echo(f"JSON report: {write_load_json(result, json_out)}")
    if html_out is not None:
        from channels.whatsapp.load import write_load_html

        click.echo(f"HTML report: {write_load_html(result, html_out)}")
    if result.failed:
        raise click.exceptions.Exit(1)


async def _run(plan: LoadPlan, config: SimulatorConfig, host: str, port: int) -> LoadResult:
    import asyncio
    import signal

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from channels.whatsapp.load import Gate, check_target, run_load

    await check_target(plan.target_url, config)
    loop = asyncio.get_running_loop()
    gate = Gate(plan.rate, plan.max_messages, loop.time() + plan.duration)
    with contextlib.suppress(NotImplementedError, RuntimeError):  # Ctrl-C ends the run early
        loop.add_signal_handler(signal.SIGINT, gate.close)
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("starting", total=plan.duration)

        def tick(stats: LoadStats, elapsed: float) -> None:
            progress.update(task, completed=min(elapsed, plan.duration), description=_line(stats))

        def ready(url: str) -> None:
            version, number = config.api_version, config.phone_number_id
            console.print(f"fake Graph API on {url}/{version}/{number}/messages")

        try:
            return await run_load(
                plan,
                config,
                graph_host=host,
                graph_port=port,
                on_tick=tick,
                on_ready=ready,
                gate=gate,
            )
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)


def _line(stats: LoadStats) -> str:
    recent = stats.latencies[-500:]
    p95 = sorted(recent)[int(0.95 * (len(recent) - 1))] if recent else None
    shown = f"{p95 * 1000:.0f} ms" if p95 is not None else "-"
    return (
        f"{stats.sent} sent, {stats.replied} replies, {stats.lost} lost, "
        f"{_refused(stats.refused)}, {stats.duplicated} dup, {stats.errors} errors, "
        f"recent p95 {shown}"
    )


def _refused(by_code: Mapping[int, int], *, first: bool = False) -> str:
    """``3 refused (130429: 2, 131056: 1)``, or ``refused 3 (...)`` with ``first``."""
    total = sum(by_code.values())
    codes = ", ".join(f"{code}: {n}" for code, n in sorted(by_code.items()))
    count = f"refused {total}" if first else f"{total} refused"
    return f"{count} ({codes})" if total else count


def _print_summary(result: LoadResult) -> None:
    figures: dict[str, Any] = result.summary()
    latency = figures["latency_s"]

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value * 1000:.1f} ms"

    click.echo(
        f"{figures['messages_sent']} messages in {figures['active_s']:.1f}s "
        f"({figures['messages_per_s']}/s), {figures['replies']} replies; "
        f"latency p50 {ms(latency['p50'])}, p95 {ms(latency['p95'])}, p99 {ms(latency['p99'])}"
    )
    turns = {int(code): n for code, n in figures["refused_turns"].items()}
    click.echo(
        f"lost {figures['lost_replies']}, duplicated {figures['duplicated_replies']}, "
        f"late {figures['late_replies']}, {_refused(turns, first=True)}, "
        f"errors {figures['errors']}" + (" (stopped early)" if result.stopped_early else "")
    )
    if result.plan.statuses:
        answered = sum(figures["statuses_answered"].values())
        failed = sum(figures["status_webhook_errors"].values())
        click.echo(
            f"status webhooks: {answered} answered, {failed} failed, "
            f"{figures['statuses_unsent']} unsent at the end"
        )
