"""The fake Graph API of ``harness load`` on its own, for ``benchmarks/load.py``.

It serves the same app a load run serves (Meta's validation, the load run's
send handler), with no users, so a bare client can measure how many sends a
second the receiving side of a load run takes.

Run: ``python -m benchmarks.load_graph --port 8000``.
"""

from __future__ import annotations

import argparse
import asyncio

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.graph import create_graph_app
from channels.whatsapp.ids import id_source
from channels.whatsapp.load import Inbox, LoadStats
from channels.whatsapp.media import MediaStore
from channels.whatsapp.server import BackgroundServer
from harness.clock import SystemClock

__all__ = ["main"]


async def _serve(port: int) -> None:
    loop = asyncio.get_running_loop()
    config = SimulatorConfig()
    stats = LoadStats(loop.time())
    inbox = Inbox({}, stats, loop.time)
    clock = SystemClock()
    app = create_graph_app(
        access_tokens={config.access_token},
        phone_numbers={config.phone_number_id: config.display_phone_number},
        on_send=inbox,
        media=MediaStore(clock, public_url=config.public_url, rng=id_source()),
        clock=clock,
        on_refuse=inbox.refused,
    )
    async with BackgroundServer(app, "127.0.0.1", port):
        await asyncio.Event().wait()


def main() -> None:
    """Serve until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    asyncio.run(_serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
