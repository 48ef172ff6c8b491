"""``harness worker``: run the scenarios that ``harness run --distributed`` hands out."""

from __future__ import annotations

import contextlib

import click

from harness.durations import parse_duration
from harness.exceptions import ConfigError

__all__ = ["worker_command"]


@click.command("worker")
@click.option(
    "--broker",
    "broker_url",
    required=True,
    envvar="HARNESS_BROKER_URL",
    help="The Redis the runs queue their scenarios in, as given to harness run --distributed "
    "(also read from HARNESS_BROKER_URL).",
)
@click.option(
    "--concurrency",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Scenarios run at once (in-process agents are CPU-bound: start a worker per core).",
)
@click.option(
    "--heartbeat",
    default="10s",
    show_default=True,
    help="How long a scenario may go unheard from this worker before another worker retries it.",
)
@click.option("--burst", is_flag=True, help="Stop once the queue has been empty for 2 seconds.")
@click.option(
    "--graph-host",
    default="127.0.0.1",
    show_default=True,
    help="Where the fake Graph API of scenarios against an agent at a URL listens.",
)
@click.option(
    "--graph-port",
    default=0,
    show_default=True,
    type=click.IntRange(min=0, max=65535),
    help="Its port (0: a free one).",
)
@click.option(
    "--graph-advertise",
    default=None,
    metavar="URL",
    help="The address other Graph APIs of the harness (harness serve --routes, other workers) "
    "reach it at (default: http://HOST:PORT, the machine's name for 0.0.0.0).",
)
def worker_command(
    broker_url: str,
    concurrency: int,
    heartbeat: str,
    burst: bool,
    graph_host: str,
    graph_port: int,
    graph_advertise: str | None,
) -> None:
    """Take scenarios off a distributed run's queue and run them, until stopped.

    Each scenario runs as harness run would run it locally; its result goes back to the
    run that queued it. A worker that dies mid-scenario has it retried by another.
    Scenarios against an agent at a URL are played with a Graph API this worker serves
    (--graph-host, --graph-port); sends for their users reach it from whichever Graph API
    the agent calls.
    """
    # Imported here, not above: `harness --help` reads this module for the help alone.
    import asyncio

    from harness.suites.worker import GraphPlace, run_worker

    try:
        beat = parse_duration(heartbeat).total_seconds()
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--heartbeat") from None
    if beat < 1:
        raise click.BadParameter("it must be at least 1s", param_hint="--heartbeat")
    if graph_advertise is not None and not graph_advertise.startswith(("http://", "https://")):
        raise ConfigError(f"--graph-advertise {graph_advertise!r}: expected an http:// URL")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            run_worker(
                broker_url,
                concurrency=concurrency,
                heartbeat=beat,
                burst=burst,
                say=lambda line: click.echo(line),
                graph=GraphPlace(graph_host, graph_port, graph_advertise),
            )
        )
