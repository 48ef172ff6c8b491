"""A bot written with FastAPI runs in-process as a target, as a Starlette one does.

FastAPI's app has route decorators named ``post`` and ``get`` and a
``description``: the shape of the simulator's webhook targets, which it must
not be taken for.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest
from fastapi import FastAPI, Request, Response

from harness.channel import AgentEnvironment
from tests.support.cli import harness

SCENARIO = """
steps:
  - say: hello there
  - expect: {reply_contains: "You said: hello there", replies: 1}
invariants: [every_inbound_answered, sends_valid]
"""


def factory(env: AgentEnvironment) -> FastAPI:
    """An echo bot, written as a team writing a FastAPI bot would."""
    settings, http = env.settings, env.http_client
    assert http is not None
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    graph, number = settings["WHATSAPP_GRAPH_URL"], settings["WHATSAPP_PHONE_NUMBER_ID"]
    send_url = f"{graph}/v25.0/{number}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    app = FastAPI(description="an echo bot")

    @app.get("/webhook")
    async def verify(request: Request) -> Response:
        if request.query_params.get("hub.verify_token") != settings["WHATSAPP_VERIFY_TOKEN"]:
            return Response("wrong token", status_code=403)
        return Response(request.query_params["hub.challenge"])

    @app.post("/webhook")
    async def webhook(request: Request) -> Response:
        body = await request.body()
        signed = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(signed, request.headers.get("x-hub-signature-256", "")):
            return Response("bad signature", status_code=403)
        for entry in (await request.json())["entry"]:
            for change in entry["changes"]:
                for message in change["value"].get("messages", []):
                    text = message.get("text", {}).get("body", "that")
                    reply = {
                        "messaging_product": "whatsapp",
                        "to": message["from"],
                        "type": "text",
                        "text": {"body": f"You said: {text}"},
                    }
                    await http.post(send_url, json=reply, headers=auth)
        return Response("ok")

    return app


def test_a_fastapi_bot_is_a_target_like_any_asgi_app(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "echo.yaml").write_text(SCENARIO, encoding="utf-8")
    code = harness("run", "--target", f"{__name__}:factory", str(tmp_path / "echo.yaml"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 passed" in out
