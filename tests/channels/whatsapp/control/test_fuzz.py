"""Schemathesis against ``harness serve``'s whole document: the fake Graph API and the control API.

The app is the one ``harness serve`` runs (:func:`control_app` over a
simulator with an agent connected), driven from its own ``/openapi.json``:
first each operation alone, with generated bodies valid and invalid; then
as a state machine that chains the operations the document links (a user
registered writes in, a message delivered is redelivered, an upload is
fetched and deleted) and checks, after every step, that the readers still
answer. Neither run may meet a 5xx. Both are bounded, together well under a
minute. The simulator keeps little (:data:`RETENTION`), so calls also meet
ids it has forgotten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis.stateful import invariant, run_state_machine_as_test
from schemathesis.checks import not_a_server_error
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.stateful import OpenAPIStateMachine

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import CONTROL_ENDPOINTS, control_app
from channels.whatsapp.retention import RetentionPolicy
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

CONFIG = SimulatorConfig()
WA_ID = "5511987654321"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
READERS = ("/_harness/outbox", "/_harness/events", "/_harness/conversation", "/_harness/export")
# Small limits, so that generated calls meet ids the server has forgotten.
RETENTION = RetentionPolicy(events=40, outbox=5, messages=3, media=2)


def _served() -> tuple[WhatsAppSimulator, Any]:
    """A simulator with the echo bot connected, and the app ``harness serve`` runs for it."""
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock(), retention=RETENTION)
    bot = BotConfig(
        app_secret=CONFIG.app_secret,
        verify_token=CONFIG.verify_token,
        access_token=CONFIG.access_token,
        phone_number_id=CONFIG.phone_number_id,
        graph_url=CONFIG.public_url,
    )
    sim.connect(EchoBot(bot, sim.graph_client()).app())
    sim.add_user(WA_ID, "Ana")
    return sim, control_app(sim)


_SIM, _APP = _served()
# A user's file goes up as its raw bytes, whatever its type.
schemathesis.serializer.alias(
    sorted({media for e in CONTROL_ENDPOINTS for media in e.raw} - {"image/jpeg", "image/png"}),
    "application/octet-stream",
)
_config = schemathesis.Config.from_dict(
    {
        "seed": 20260921,
        "headers": {"Authorization": f"Bearer {CONFIG.access_token}"},
        # Known ids let generated requests reach what lies behind them. A read waits a moment
        # for news at most: nothing moves this server's clock between calls, so a read past
        # the end would wait its whole time, up to a minute, past the client's timeout.
        "parameters": {
            "phone_number_id": CONFIG.phone_number_id,
            "version": CONFIG.api_version,
            "wait": "0.2",
        },
        "generation": {"max-examples": 12},
    }
)
schema = schemathesis.openapi.from_asgi("/openapi.json", _APP, config=_config)


@pytest.mark.slow
@schema.parametrize()
@settings(deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
def test_every_operation_of_harness_serve_answers_without_a_server_error(
    case: schemathesis.Case[Any],
) -> None:
    case.call_and_validate(checks=CHECKS)


class _Session(OpenAPIStateMachine):
    """Linked calls on one simulator; after each, the conversation can still be read.

    It counts its sequences and calls into ``counts``, for RELIABILITY.md.
    """

    counts: dict[str, int]

    def __init__(self) -> None:
        super().__init__()
        self.counts["sequences"] += 1

    @invariant()
    def the_readers_still_answer(self) -> None:
        for path in READERS:
            answer = _call_app(path)
            assert answer.status_code == 200, f"{path}: {answer.text}"

    def validate_response(
        self,
        response: Response,
        case: schemathesis.Case[Any],
        additional_checks: Any = None,
        **kwargs: Any,
    ) -> None:
        """Only a server error fails a step: a linked call may well be refused."""
        self.counts["calls"] += 1
        case.validate_response(response, checks=[not_a_server_error])


def _call_app(path: str) -> Any:
    return schema[path]["GET"].Case().call()


@pytest.mark.slow
def test_linked_calls_never_meet_a_server_error_and_leave_the_readers_answering(
    record_property: Callable[[str, object], None],
) -> None:
    machine = schema.as_state_machine()
    counts = {"sequences": 0, "calls": 0}
    session = type("Session", (_Session, machine), {"counts": counts})
    run_state_machine_as_test(
        session,
        settings=settings(
            max_examples=25,
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    record_property("sequences", counts["sequences"])
    record_property("calls", counts["calls"])
