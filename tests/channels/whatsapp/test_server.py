"""Serving an app on a loopback port: a port already taken is one clear error."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from starlette.applications import Starlette

from channels.whatsapp.server import BackgroundServer
from harness.exceptions import ChannelError
from tests.support.cli import harness

pytestmark = pytest.mark.network


async def test_a_port_in_use_is_a_channel_error_naming_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ChannelError, match=rf"could not serve on http://127.0.0.1:{port}: "):
            await BackgroundServer(Starlette(), port=port).start()


async def test_a_free_port_serves_and_stops() -> None:
    server = BackgroundServer(Starlette())
    await server.start()
    try:
        assert server.port != 0
        with socket.create_connection(("127.0.0.1", server.port), timeout=2):
            pass
        # asyncio turns Nagle's algorithm off on the connections of a socket that says it is
        # TCP; one that does not makes every answer wait out the client's delayed ACK (40 ms).
        listening = [s for srv in server._server.servers for s in srv.sockets]
        assert [s.proto for s in listening] == [socket.IPPROTO_TCP]
    finally:
        await server.stop()


def test_a_run_whose_graph_port_is_taken_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("steps:\n  - say: hi\n", encoding="utf-8")
    with socket.socket() as taken, socket.socket() as agent:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        agent.bind(("127.0.0.1", 0))
        agent.listen()  # something takes connections at the target URL
        target = f"http://127.0.0.1:{agent.getsockname()[1]}/webhook"
        code = harness("run", str(scenario), "--target-url", target, "--graph-port", port)
    captured = capsys.readouterr()
    assert code == 2
    errors = [line for line in captured.err.splitlines() if line.strip()]
    assert len(errors) == 1, captured.err
    assert f"could not serve on http://127.0.0.1:{port}" in errors[0]
    assert "Task exception" not in captured.err + captured.out
