"""One replica of an ASGI app on a port that other replicas share (``SO_REUSEPORT``).

``python -m tests.support.replica agents.booking:app --host 127.0.0.1 --port 9000`` twice
gives two processes behind one address, the kernel sharing connections between
them, as two containers behind a service name are.
"""

from __future__ import annotations

import argparse
import asyncio
import socket

import uvicorn

__all__ = ["main"]


def main() -> None:
    """Bind the shared port, then serve the app on it."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("app")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((args.host, args.port))
    server = uvicorn.Server(uvicorn.Config(args.app, log_level="warning"))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
