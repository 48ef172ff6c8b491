"""A run whose every user-supplied text is a script-injection payload, for report.html.

What reaches a report comes from people and agents the harness does not
control: the user's messages and name, the agent's replies and buttons, tool
arguments and results, scenario names, paths and YAML, error messages. Each
payload below runs ``MARK`` if a browser ever executes it, which sets
``data-pwned`` on the page's root element; a report that stays safe shows
every payload as text and never gets the attribute.
"""

from __future__ import annotations

from datetime import UTC, datetime

from harness.results import RunResult, ScenarioResult, Violation
from harness.trace import Conversation, OutboundSend, Participant, ToolCall
from tests.harness.report.sample import USER, at, inbound, reply

__all__ = ["FIELDS", "MARK", "PAYLOADS", "injected_run"]

#: What a payload runs if it ever executes: no quotes, so it fits any attribute.
MARK = "document.documentElement.dataset.pwned=1"

PAYLOADS = (
    f"<script>{MARK}</script>",
    f"<img src=x onerror={MARK}>",
    '<img src="x" onerror="&#100;ocument.documentElement.dataset.pwned=1">',
    f"<svg onload={MARK}></svg>",
    f"<svg><script>{MARK}</script></svg>",
    f'"><script>{MARK}</script>',
    f"'><img src=x onerror={MARK}>",
    f"</script><script>{MARK}</script>",
    f"\u2028</script><script>{MARK}</script>",
    f"--><img src=x onerror={MARK}>",
    f"]]><img src=x onerror={MARK}>",
    f"</textarea></pre><img src=x onerror={MARK}>",
    f'<iframe srcdoc="<script>parent.{MARK}</script>"></iframe>',
    f"<details open ontoggle={MARK}>",
    f"<body onload={MARK}>",
    f"<input autofocus onfocus={MARK}>",
    f"<video><source onerror={MARK}></video>",
    f"<math><style><img src=x onerror={MARK}></style></math>",
    f'<object data="javascript:{MARK}"></object>',
    f'<meta http-equiv="refresh" content="0;url=javascript:{MARK}">',
    f'<base href="javascript:{MARK}//">',
    f'<a href="javascript:{MARK}">link</a>',
    f"<form><button formaction=javascript:{MARK}>go</button></form>",
    f"<scr<script>ipt>{MARK}</scr</script>ipt>",
    f"${{{MARK}}}",
    f"{{{{constructor.constructor('{MARK}')()}}}}",
)

#: Where each payload is put, once per payload.
FIELDS = (
    "scenario name",
    "scenario file path",
    "user's profile name",
    "user's message",
    "agent's reply",
    "agent's button title",
    "tool name",
    "tool argument",
    "tool result",
    "violation rule",
    "violation message",
    "violation evidence",
    "reproducing YAML",
    "fault profile",
    "error of a scenario that could not run",
)


def _failed(n: int, payload: str) -> ScenarioResult:
    buttons = OutboundSend(
        at=at(2),
        user=USER,
        type="interactive",
        text=payload,
        request={
            "messaging_product": "whatsapp",
            "to": USER,
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": payload},
                "action": {"buttons": [{"type": "reply", "reply": {"id": "b", "title": payload}}]},
            },
        },
        wamid=f"wamid.B{n}",
        in_window=True,
    )
    events = [
        *inbound(0, f"wamid.A{n}", payload, f"d{n}"),
        ToolCall(at=at(1), user=USER, name=payload, args={"note": payload}, result=payload),
        buttons,
        reply(3, f"wamid.C{n}", payload),
    ]
    conversation = Conversation.from_events(
        events,
        id=f"c-{n}",
        scenario=payload,
        channel="whatsapp",
        participants=(Participant(id=USER, name=payload, wa_id=USER),),
    )
    return ScenarioResult(
        name=payload,
        path=payload,
        status="failed",
        violations=(
            Violation(rule=payload, message=payload, turn=0, messages=(payload,), events=(1,)),
        ),
        faults={"preset": payload},
        reproduce=payload,
        conversation=conversation,
    )


def _errored(payload: str) -> ScenarioResult:
    return ScenarioResult(name="could not run", status="error", error=payload)


def injected_run() -> RunResult:
    """One failed scenario carrying a payload in every field, and one errored, per payload."""
    scenarios = []
    for n, payload in enumerate(PAYLOADS):
        scenarios += [_failed(n, payload), _errored(payload)]
    return RunResult(
        scenarios=tuple(scenarios),
        started_at=datetime(2025, 3, 1, 10, 0, 0, tzinfo=UTC),
        target="agents.booking:app",
    )
