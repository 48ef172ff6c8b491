"""report.html, read without a browser: structure, escaping, ticks, faults, placement."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import pytest

from harness.report import load_json, render_html, write_html, write_json
from harness.results import RunResult, ScenarioResult, Violation
from harness.trace import (
    BlockChange,
    ClockJump,
    Conversation,
    DeliveryAttempt,
    DroppedMessage,
    ErrorInfo,
    Event,
    LLMExchange,
    OutboundSend,
    StatusUpdate,
)
from tests.harness.report.dom import Element, parse
from tests.harness.report.sample import (
    DANGEROUS,
    USER,
    at,
    booking_run,
    double_booking,
    inbound,
    reply,
    statuses,
)


@pytest.fixture(scope="module")
def page() -> Element:
    return parse(render_html(booking_run()))


def _section(page: Element, status: str) -> Element:
    return page.find("section", "scenario", data_status=status)


def _one(events: list[Event], **fields: object) -> Element:
    conversation = Conversation.from_events(events)
    run = RunResult(
        scenarios=(ScenarioResult(name="s", status="passed", conversation=conversation, **fields),)  # type: ignore[arg-type]
    )
    return parse(render_html(run)).find("section", "scenario")


def test_templates_ship_as_package_data() -> None:
    folder = resources.files("harness.report").joinpath("templates")
    for name in ("report.html.j2", "report.css", "report.js"):
        assert folder.joinpath(name).is_file(), name


def test_failures_come_first_and_the_passes_are_folded(page: Element) -> None:
    sections = page.find_all("section", "scenario")
    assert [(s.attrs["data-status"], s.find("h2").text.split(None, 1)[1]) for s in sections] == [
        ("failed", "double booking"),
        ("error", "agent crash"),
        ("passed", "happy booking"),
    ]
    ids = [s.attrs["id"] for s in sections]
    assert ids == [
        "scenario-2-double-booking",
        "scenario-3-agent-crash",
        "scenario-1-happy-booking",
    ]
    folded = page.find("details", "passing")
    assert "open" not in folded.attrs  # closed until opened
    assert folded.find("summary").text == "1 passed"
    assert [s.attrs["id"] for s in folded.find_all("section", "scenario")] == [ids[2]]
    assert all(folded not in s.ancestors() for s in sections[:2])
    nav = page.find_all("li", "nav-item")
    assert [n.attrs["data-status"] for n in nav] == ["failed", "error", "passed"]
    assert [n.find("a").attrs["href"] for n in nav] == [f"#{i}" for i in ids]


def test_names_are_whole_and_a_run_without_passes_folds_nothing() -> None:
    failing = parse(render_html(RunResult(scenarios=(double_booking(),))))
    assert failing.find_all("details", "passing") == []
    long_name = "a scenario whose name is long " * 8
    passing = RunResult(scenarios=(ScenarioResult(name=long_name, status="passed"),))
    page = parse(render_html(passing))
    assert page.find("details", "passing").find("h2").text.endswith(long_name)
    assert page.find("li", "nav-item").find("a").text == long_name  # whole, never cut


def test_header_has_totals_and_filters(page: Element) -> None:
    filters = {a.attrs["data-filter"]: a for a in page.find_all("a", "filter")}
    assert list(filters) == ["all", "passed", "failed", "error"]
    assert {k: a.attrs["href"] for k, a in filters.items()} == {
        "all": "#all",
        "passed": "#passed",
        "failed": "#failed",
        "error": "#error",
    }
    assert [filters[k].find("b").text for k in filters] == ["3", "1", "1", "1"]
    assert page.find("title").text == "Harness report: 1 passed, 1 failed, 1 errors"


def test_the_page_is_self_contained(page: Element) -> None:
    html = render_html(booking_run())
    assert "<link" not in html
    assert not re.search(r"\bsrc=", html)
    assert "http://" not in html
    assert "https://" not in html
    assert [s.attrs for s in page.find_all("script")] == [{}]
    script = page.find("script").text
    assert "location.hash" in script
    assert "hidden" in script
    assert ".scenario" in page.find("style").text


class _Balance(HTMLParser):
    """Fails on a closing tag that does not close the innermost open element."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ("meta", "br", "img", "link", "input", "hr"):
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open, f"</{tag}> closes nothing"
        innermost = self.open.pop()
        assert innermost == tag, f"</{tag}> closes <{innermost}> at line {self.getpos()[0]}"


def test_every_element_is_closed_in_order() -> None:
    checker = _Balance()
    checker.feed(render_html(booking_run()))
    checker.close()
    assert checker.open == []


def test_chat_text_can_not_inject_markup() -> None:
    html = render_html(booking_run())
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt; &amp; &#34;quotes&#34;" in html
    bubble = parse(html).find("section", data_status="failed").find("div", "msg-in")
    assert bubble.find("div", "text").text == DANGEROUS


def test_everything_from_a_run_is_escaped() -> None:
    evil = '"><img src=x onerror=alert(1)>'
    scenario = ScenarioResult(
        name=evil,
        path=evil,
        status="failed",
        error=evil,
        violations=(Violation(rule=evil, message=evil, messages=(evil,)),),
        faults={evil: evil},
        reproduce=evil,
        conversation=Conversation.from_events(inbound(0, evil, evil, evil)),
    )
    html = render_html(RunResult(scenarios=(scenario,), target=evil))
    assert "<img" not in html
    violation = parse(html).find("div", "violation")
    assert violation.attrs["data-rule"] == evil


def test_user_messages_left_agent_messages_right(page: Element) -> None:
    happy = _section(page, "passed")
    inbound_texts = [b.find("div", "text").text for b in happy.find_all("div", "msg-in")]
    outbound_texts = [b.find("div", "text").text for b in happy.find_all("div", "msg-out")]
    assert inbound_texts == ["Hi! A table for 2 tomorrow at 8pm, please", "Confirm"]
    assert outbound_texts == [
        "Table for 2 tomorrow at 20:00. Confirm?",
        "Booked! Your reference is B-1.",
        "parameters: B-1",
    ]


def test_bubbles_carry_virtual_times_and_dates(page: Element) -> None:
    happy = _section(page, "passed")
    first = happy.find("div", "msg-in").find("time")
    assert first.text == "09:59:00"
    assert first.attrs["datetime"] == "2025-03-01T09:59:00+00:00"
    dates = [d.text for d in happy.find_all("div", "divider-date")]
    assert dates == ["Sat 1 Mar 2025", "Sun 2 Mar 2025"]


def test_ticks_follow_the_statuses_of_each_send(page: Element) -> None:
    happy = [t.attrs["data-tick"] for t in _section(page, "passed").find_all("span", "ticks")]
    assert happy == ["read", "delivered", "sent"]
    failing = _section(page, "failed").find_all("span", "ticks")
    assert [t.attrs["data-tick"] for t in failing] == ["read", "sent", "failed"]
    assert [t.text for t in failing] == ["✓✓", "✓", "✗ 131026 Message undeliverable"]
    assert failing[0].attrs["title"] == "sent 09:59:12 · delivered 09:59:13 · read 09:59:14"


@pytest.mark.parametrize(
    ("names", "tick", "symbol"),
    [
        ((), "pending", "◷"),
        (("sent",), "sent", "✓"),
        (("sent", "delivered"), "delivered", "✓✓"),
        (("delivered", "sent"), "delivered", "✓✓"),
        (("sent", "delivered", "read"), "read", "✓✓"),
        (("sent", "read"), "read", "✓✓"),
        (("sent", "played"), "read", "✓✓"),
    ],
)
def test_tick_for_each_status(names: tuple[str, ...], tick: str, symbol: str) -> None:
    section = _one(
        [
            *inbound(0, "w.in", "hi", "d"),
            reply(1, "w.out", "hello"),
            *statuses(2, "w.out", *names, prefix="s"),
        ]
    )
    ticks = section.find("span", "ticks")
    assert (ticks.attrs["data-tick"], ticks.text) == (tick, symbol)


def test_a_failed_status_shows_code_title_and_details() -> None:
    failed = StatusUpdate(
        at=at(3),
        user=USER,
        wamid="w.out",
        status="failed",
        errors=(
            ErrorInfo(code=131047, title="Re-engagement message", details="More than 24 hours"),
        ),
    )
    section = _one(
        [
            *inbound(0, "w.in", "hi", "d"),
            reply(1, "w.out", "late"),
            *statuses(2, "w.out", "sent", prefix="s"),
            failed,
        ]
    )
    ticks = section.find("span", "ticks")
    assert (ticks.attrs["data-tick"], ticks.text) == ("failed", "✗ 131047 Re-engagement message")
    assert section.find("div", "send-error").text == "✗ 131047: More than 24 hours"


def test_a_block_and_a_dropped_message_are_notes_in_the_chat() -> None:
    block = BlockChange(at=at(2), user=USER, input=f"+{USER}")
    dropped = DroppedMessage(at=at(9), user=USER, wamid="w.gone", type="text", text="hello?")
    refused = BlockChange(
        at=at(10), user=USER, blocked=False, error=ErrorInfo(code=131021, details="own number")
    )
    section = _one([*inbound(0, "w.in", "you idiot", "d"), block, dropped, refused])
    texts = [chip.text for chip in section.find_all("span", "chip")]
    assert f"⛔ agent blocked {USER}" in texts
    assert "⛔ not delivered (blocked): hello?" in texts
    assert f"unblock of {USER} refused (131021)" in texts


def test_a_refused_send_is_failed_and_outside_the_window_is_marked() -> None:
    refused = OutboundSend(
        at=at(1),
        user=USER,
        type="text",
        text="too late",
        error=ErrorInfo(code=131047, title="Re-engagement message", message="window closed"),
        in_window=False,
    )
    section = _one([*inbound(0, "w.in", "hi", "d"), refused])
    assert section.find("span", "ticks").text == "✗ 131047 Re-engagement message"
    assert section.find("span", "chip", data_fault="window").text == "outside the 24h window"


def test_interactive_buttons_lists_and_templates_are_drawn(page: Element) -> None:
    happy = _section(page, "passed")
    buttons = happy.find("div", "buttons").find_all("span", "button")
    assert [(b.text, b.attrs["title"]) for b in buttons] == [
        ("Confirm", "confirm"),
        ("Change time", "change"),
    ]
    template = happy.find("div", "template")
    assert template.find("div", "label").text == "template · booking_reminder (en_US)"
    tap = happy.find_all("div", "msg-in")[1]
    assert tap.find("div", "label").text == "tapped a button · reply"

    menu = OutboundSend(
        at=at(1),
        user=USER,
        type="interactive",
        wamid="w.list",
        request={
            "type": "interactive",
            "interactive": {
                "type": "list",
                "header": {"type": "text", "text": "Shipping"},
                "body": {"text": "Pick one"},
                "footer": {"text": "Prices include tax"},
                "action": {
                    "button": "Options",
                    "sections": [
                        {
                            "title": "Fast",
                            "rows": [{"id": "x", "title": "Express", "description": "1-2 days"}],
                        },
                        {
                            "title": "Cheap",
                            "rows": [
                                {"id": "s", "title": "Standard"},
                                {"id": "p", "title": "Pick up"},
                            ],
                        },
                    ],
                },
            },
        },
    )
    section = _one([*inbound(0, "w.in", "ship?", "d"), menu])
    bubble = section.find("div", "msg-out")
    assert bubble.find("div", "header").text == "Shipping"
    assert bubble.find("div", "text").text == "Pick one"
    assert bubble.find("div", "footer").text == "Prices include tax"
    assert bubble.find("div", "list-button").text == "☰ Options"
    assert [s.text for s in bubble.find_all("div", "list-section")] == ["Fast", "Cheap"]
    assert [li.text for li in bubble.find_all("li")] == ["Express 1-2 days", "Standard", "Pick up"]


def test_tool_calls_are_inline_cards(page: Element) -> None:
    cards = _section(page, "failed").find_all("div", "tool")
    assert [c.attrs["data-tool"] for c in cards] == ["book_table", "book_table"]
    assert cards[0].find("span", "badge-side-effect").text == "side effect"
    rows = [r.find("code").text for r in cards[1].find_all("div", "tool-row")]
    assert rows == ['{"party": 2, "time": "20:00"}', '{"booking_id": "B-2"}']
    assert "flagged" in cards[1].classes  # the event the violation points at
    assert "flagged" not in cards[0].classes
    happy_card = _section(page, "passed").find("div", "tool")
    assert happy_card.find_all("span", "badge-side-effect") == []


def test_channel_faults_are_marked_on_the_bubbles_they_touched(page: Element) -> None:
    failing = _section(page, "failed")
    first = failing.find("div", "msg-in")
    retry = first.find("span", "chip", data_fault="retry")
    assert retry.text == "retried ×1"
    assert retry.attrs["title"] == "d1 attempt 1: timeout; d1 attempt 2: 200"
    copy = failing.find("div", "duplicate")
    assert "msg-in" in copy.classes
    assert copy.find("span", "chip", data_fault="duplicate").text == "duplicate delivery"
    late = failing.find_all("div", "msg-out")[1].find("span", "chip", data_fault="late_status")
    assert late.text == "late status"


def test_status_faults_reordering_and_batching_are_named() -> None:
    events: list[Event] = [
        DeliveryAttempt(
            at=at(0),
            user=USER,
            delivery="d1",
            items=("w.in", "w.in2"),
            status_code=200,
            faults=("reordered", "batched"),
        ),
        *inbound(0, "w.in", "one", "d1")[1:],
        reply(1, "w.out", "ok"),
        DeliveryAttempt(
            at=at(2),
            user=USER,
            delivery="s1",
            items=("w.out:delivered",),
            status_code=200,
            faults=("out_of_order",),
        ),
        StatusUpdate(at=at(2), user=USER, wamid="w.out", status="delivered", delivery="s1"),
        DeliveryAttempt(
            at=at(3),
            user=USER,
            delivery="s2",
            items=("w.out:delivered",),
            status_code=200,
            faults=("out_of_order", "duplicate"),
        ),
    ]
    section = _one(events)
    inbound_chips = [c.text for c in section.find("div", "msg-in").find_all("span", "chip")]
    assert inbound_chips == ["reordered", "batched"]
    outbound_chips = [c.text for c in section.find("div", "msg-out").find_all("span", "chip")]
    assert outbound_chips == ["status out of order", "duplicate status"]


def test_a_message_that_never_got_through_is_shown() -> None:
    events: list[Event] = [
        *inbound(0, "w.in", "hi", "d1"),
        reply(1, "w.out", "hello"),
        DeliveryAttempt(at=at(5), user=USER, delivery="d2", items=("w.lost",), status_code=500),
        DeliveryAttempt(
            at=at(10),
            user=USER,
            delivery="d2",
            attempt=2,
            items=("w.lost",),
            error="timeout",
            faults=("retry",),
        ),
    ]
    chip = _one(events).find("div", "note").find("span", "chip")
    assert chip.attrs["class"] == "chip chip-failure"
    assert chip.text == "webhook d2 (2 attempts) never acknowledged: timeout · retry"
    assert "w.lost" in chip.attrs["title"]


def test_receipts_typing_and_model_calls_are_tiny_chips(page: Element) -> None:
    notes = [n.find("span", "chip") for n in _section(page, "passed").find_all("div", "note")]
    assert [(n.attrs["class"], n.text) for n in notes] == [
        ("chip chip-receipt", "✓✓ marked as read"),
        ("chip chip-llm", "model call · claude-x via an unrecorded provider · 812→64 tokens"),
    ]


@pytest.mark.parametrize(
    ("provider", "source", "chip"),
    [
        (
            "offline-stand-in",
            "live",
            "model call · the offline stand-in (no model), asked for claude-sonnet-4-6"
            " · 1877→44 tokens (estimated)",
        ),
        (
            "offline-stand-in",
            "recorded",
            "model call · recorded: the offline stand-in (no model), asked for claude-sonnet-4-6"
            " · 1877→44 tokens (estimated)",
        ),
        (
            "anthropic",
            "live",
            "model call · claude-sonnet-4-6 via the Anthropic API · 1877→44 tokens",
        ),
    ],
)
def test_a_model_call_names_who_answered_it(provider: str, source: str, chip: str) -> None:
    exchange = LLMExchange(
        at=at(2),
        user=USER,
        key="k",
        model="claude-sonnet-4-6",
        input_tokens=1877,
        output_tokens=44,
        provider=provider,
        source=source,  # type: ignore[arg-type]  # a literal, parametrized
    )
    events: list[Event] = [*inbound(0, "w.1", "hi", "d1"), exchange, reply(3, "w.o", "hello")]
    conversation = Conversation.from_events(events)
    scenario = ScenarioResult(name="s", status="passed", conversation=conversation)
    page = parse(render_html(RunResult(scenarios=(scenario,))))
    assert page.find("span", "chip-llm").text == chip
    assert "model call · claude-sonnet-4-6 ·" not in page.find("section").text
    [models] = page.find_all("span", "models")
    assert models.attrs["data-provider"] == provider
    assert models.text.startswith("model: 1 model call")


def test_clock_jumps_are_dividers(page: Element) -> None:
    jump = _section(page, "passed").find("div", "divider-jump")
    assert jump.text == "⏩ 25h later · wait 25h"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (45, "45s"),
        (90, "1m 30s"),
        (300, "5m"),
        (5400, "1h 30m"),
        (90000, "25h"),
        (3 * 86400 + 7200, "3d 2h"),
    ],
)
def test_jump_lengths_read_naturally(seconds: int, text: str) -> None:
    events: list[Event] = [
        *inbound(0, "w.in", "hi", "d"),
        ClockJump(at=at(seconds), previous=at(0)),
        *inbound(seconds, "w.in2", "again", "d2"),
    ]
    assert _one(events).find("div", "divider-jump").text == f"⏩ {text} later"


def test_events_outside_turns_are_placed_by_time() -> None:
    template = OutboundSend(
        at=at(0), user=USER, type="template", wamid="w.t", request={"template": {"name": "hello"}}
    )
    events: list[Event] = [
        template,
        *inbound(10, "w.in", "hi", "d"),
        reply(11, "w.out", "hello"),
        ClockJump(at=at(100000), previous=at(11)),
        *inbound(100000, "w.in2", "back", "d2"),
    ]
    chat = _one(events).find("div", "chat")
    order = [(c.tag, sorted(c.classes)) for c in chat.children if isinstance(c, Element)]
    assert order == [
        ("div", ["divider", "divider-date"]),
        ("div", ["msg", "msg-out", "template"]),
        ("div", ["turn"]),
        ("div", ["divider", "divider-jump"]),
        ("div", ["divider", "divider-date"]),
        ("div", ["turn"]),
    ]


def test_a_violation_is_highlighted_at_its_turn(page: Element) -> None:
    failing = _section(page, "failed")
    violation = failing.find("div", "violation", data_rule="no_repeated_side_effects")
    turn = next(a for a in violation.ancestors() if "turn" in a.classes)
    assert turn.attrs["data-turn"] == "1"
    assert "violated" in turn.classes
    assert turn.find("a", "turn-label").text == "Turn 2"
    assert violation.find("p", "violation-headline").text.startswith(
        "⚠ no_repeated_side_effects at turn 2 (line 5)"
    )
    assert violation.find("pre").text.splitlines()[0] == "user 09:59:40: yes"
    first_turn = failing.find("div", "turn", data_turn="0")
    assert "violated" not in first_turn.classes
    assert first_turn.find_all("div", "violation") == []


def test_a_cause_leads_and_what_follows_is_drawn_inside_it() -> None:
    scenario = double_booking()
    lead = scenario.violations[0]
    follow = Violation(
        kind="expectation", rule="expect", message="1 booking expected", turn=1, events=lead.events
    )
    run = RunResult(scenarios=(scenario.model_copy(update={"violations": (follow, lead)}),))
    section = parse(render_html(run)).find("section", "scenario")
    [summary] = section.find_all("ol", "causes")
    [item] = summary.find_all("li")
    assert item.find("a").text == lead.headline()
    assert item.find("a").attrs["href"] == f"#{section.attrs['id']}-turn-2"
    assert item.find("span", "follow-count").text == "+1 from the same cause"
    [box] = section.find_all("div", "violation")
    assert box.attrs["data-rule"] == "no_repeated_side_effects"
    assert box.find("li", "follow").text == follow.headline()
    assert box.find("li", "follow").attrs["data-rule"] == "expect"


def test_violations_without_a_turn_go_to_the_top(page: Element) -> None:
    failing = _section(page, "failed")
    top = [c for c in failing.children if isinstance(c, Element) and "violation" in c.classes]
    assert [v.attrs["data-rule"] for v in top] == ["expect"]
    beyond = double_booking().model_copy(
        update={"violations": (Violation(rule="late", message="m", turn=9),)}
    )
    section = parse(render_html(RunResult(scenarios=(beyond,)))).find("section")
    assert section.find("div", "violation").parent is section


def test_the_reproducing_yaml_is_under_a_failing_scenario(page: Element) -> None:
    failing = _section(page, "failed")
    assert failing.find("div", "reproduce").find("pre").text == double_booking().reproduce
    assert _section(page, "passed").find_all("div", "reproduce") == []


def test_an_errored_scenario_shows_its_error(page: Element) -> None:
    errored = _section(page, "error")
    assert (
        errored.find("pre", "scenario-error").text
        == "agent answered 500 to every delivery\nRuntimeError: boom"
    )
    nothing = ScenarioResult(name="x", status="error", error="handshake failed")
    section = parse(render_html(RunResult(scenarios=(nothing,)))).find("section")
    assert section.find("p", "empty").text == "No conversation was recorded."


def test_several_users_are_named_on_their_bubbles() -> None:
    events: list[Event] = [*inbound(0, "w.1", "hi", "d1"), reply(1, "w.o", "hello")]
    events.append(inbound(2, "w.2", "me too", "d2")[1].model_copy(update={"user": "other"}))
    senders = [s.text for s in _one(events).find_all("div", "sender")]
    assert senders == [USER, "other"]


def test_an_empty_run_and_repeated_names() -> None:
    assert "No scenarios were run." in render_html(RunResult())
    same = ScenarioResult(name="same", status="passed")
    ids = [
        s.attrs["id"]
        for s in parse(render_html(RunResult(scenarios=(same, same)))).find_all("section")
    ]
    assert len(set(ids)) == 2


def test_a_report_loaded_from_json_draws_the_same_page(tmp_path: Path) -> None:
    run = booking_run()
    loaded = load_json(write_json(run, tmp_path / "report.json"))
    assert render_html(loaded) == render_html(run)


def test_write_html_writes_the_page(tmp_path: Path) -> None:
    path = write_html(booking_run(), tmp_path / "report.html")
    assert path.read_text(encoding="utf-8") == render_html(booking_run())
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600
