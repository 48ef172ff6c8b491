"""A minimal echo agent for ``benchmarks/load.py``: a raw ASGI app under uvicorn.

It checks each webhook's signature, answers every text message with one
Graph API send (awaited inside the handler, through one aiohttp session),
and answers 200. Statuses are read and ignored, which makes a signed status
webhook the bare round trip the benchmark measures the ceiling with. It is
kept this small so that the figures measure the harness, not the agent.

Run: ``python -m benchmarks.echo_agent --port 8001 --graph http://127.0.0.1:8000``.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
from typing import Any

import aiohttp
import uvicorn

__all__ = ["EchoAgent", "main"]


class EchoAgent:
    """The ASGI app: ``/webhook`` only."""

    def __init__(self, graph: str, secret: str, token: str, phone_id: str) -> None:
        self.url = f"{graph.rstrip('/')}/v25.0/{phone_id}/messages"
        self.secret = secret.encode()
        self.headers = {"Authorization": f"Bearer {token}"}
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one request."""
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self.session is not None:
                        await self.session.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        status = 200
        if scope["method"] == "POST":
            status = await self._webhook(scope, body)
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def _webhook(self, scope: dict[str, Any], body: bytes) -> int:
        given = dict(scope["headers"]).get(b"x-hub-signature-256", b"").decode()
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(given, expected):
            return 403
        if self.session is None:
            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200))
        update = json.loads(body)
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                for message in change.get("value", {}).get("messages", []):
                    text = message.get("text", {}).get("body", message.get("type", ""))
                    reply = {
                        "messaging_product": "whatsapp",
                        "to": message["from"],
                        "type": "text",
                        "text": {"body": f"You said: {text}"},
                    }
                    async with self.session.post(
                        self.url, json=reply, headers=self.headers
                    ) as answer:
                        await answer.read()
        return 200


def main() -> None:
    """Serve the agent on 127.0.0.1."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--graph", required=True)
    parser.add_argument("--secret", default="harness-app-secret")
    parser.add_argument("--token", default="harness-access-token")
    parser.add_argument("--phone-id", default="100200300400500")
    args = parser.parse_args()
    app = EchoAgent(args.graph, args.secret, args.token, args.phone_id)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
