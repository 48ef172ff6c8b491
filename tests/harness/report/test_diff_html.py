"""The diff page: two panes of aligned turns, a summary that links to each change, escaping."""

from __future__ import annotations

from harness.replay.diff import diff_conversations
from harness.report import render_diff_html
from harness.trace import Conversation
from tests.harness.replay.diff.bookings import DANGEROUS, OTHER, USER, booking, two_users
from tests.harness.report.dom import Element, parse


def _page(a: Conversation, b: Conversation, **titles: str) -> Element:
    return parse(render_diff_html(diff_conversations(a, b), a, b, **titles))


def test_the_page_has_two_panes_of_aligned_turns() -> None:
    a = booking()
    b = booking(booked="Booked for 9pm", thanks=False, first=DANGEROUS)
    page = _page(a, b, title_a="recorded", title_b="replayed")
    pane_a, pane_b = page.find_all("div", "pane")
    assert (pane_a.attrs["data-side"], pane_b.attrs["data-side"]) == ("a", "b")
    rows_a, rows_b = pane_a.find_all("section", "row"), pane_b.find_all("section", "row")
    assert (
        [r.attrs["data-row"] for r in rows_a]
        == [r.attrs["data-row"] for r in rows_b]
        == [
            "1",
            "2",
            "3",
        ]
    )
    assert [r.attrs["data-status"] for r in rows_a] == ["changed", "changed", "only_a"]
    assert all("changed" in r.classes for r in rows_a + rows_b)
    assert [r.attrs["id"] for r in rows_a] == ["turn-1", "turn-2", "turn-3"]
    assert [r.attrs["id"] for r in rows_b] == ["turn-1-b", "turn-2-b", "turn-3-b"]
    # each side draws its own turn as chat bubbles
    assert rows_a[1].find("div", "msg-out").find("div", "text").text == "Booked for 8pm"
    assert rows_b[1].find("div", "msg-out").find("div", "text").text == "Booked for 9pm"
    assert rows_a[0].find("span", "ticks").attrs["data-tick"] == "read"
    assert rows_a[0].find("div", "tool").attrs["data-tool"] == "check_availability"
    assert rows_b[2].find("p", "absent").text == "Only in A: B has no turn here."
    assert rows_b[2].find_all("div", "msg") == []
    # the changes are listed once, in pane B
    assert [li.text for li in rows_b[1].find("ul", "changes").find_all("li")] == [
        "reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"
    ]
    assert pane_a.find_all("ul", "changes") == []


def test_the_summary_links_to_each_changed_turn() -> None:
    page = _page(booking(), booking(booked="Booked for 9pm", extra_reply="?", thanks=False))
    verdict = page.find("p", "verdict")
    assert "verdict-different" in verdict.classes
    assert verdict.text.startswith("2 of 3 turns differ (1 changed, 1 only in a)")
    links = page.find("ol", "jumps").find_all("a")
    assert [a.attrs["href"] for a in links] == ["#turn-2", "#turn-3"]
    assert links[0].text == (
        "Turn 2 changed reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm' (+2 more)"
    )
    ids = {e.attrs["id"] for e in page.iter() if "id" in e.attrs}
    assert {a.attrs["href"][1:] for a in links} <= ids
    assert links[1].find("span", "status").text == "only in a"
    assert page.find("body").attrs["data-same"] == "false"
    views = {a.attrs["data-view"]: a.attrs["href"] for a in page.find_all("a", "view")}
    assert views == {"all": "#all", "changed": "#changed"}


def test_a_page_without_differences() -> None:
    page = _page(booking(), booking(ids="B"))
    assert page.find("body").attrs["data-same"] == "true"
    assert "verdict-same" in page.find("p", "verdict").classes
    assert page.find_all("ol", "jumps") == []
    assert page.find_all("section", "changed") == []
    assert page.find("title").text.endswith(": same")


def test_the_page_scrolls_its_panes_together() -> None:
    page = _page(booking(), booking(slot="21:00"))
    (script,) = page.find_all("script")
    code = script.text
    assert 'a.addEventListener("scroll", follow(a, b))' in code
    assert 'b.addEventListener("scroll", follow(b, a))' in code
    assert "target.scrollTop = source.scrollTop" in code
    assert "minHeight" in code  # rows are given equal heights
    style = page.find("style").text
    assert ".pane { position: relative; overflow: auto;" in style
    assert ".bubble" in style  # the report's chat look, inlined


def test_the_page_escapes_everything_from_the_conversations() -> None:
    a = booking()
    b = booking(first=DANGEROUS, booked=DANGEROUS)
    evil = '"><img src=x onerror=alert(1)>'
    html = render_diff_html(diff_conversations(a, b), a, b, title_a=evil, title_b=DANGEROUS)
    assert "<script>alert" not in html
    assert "<img" not in html
    page = parse(html)
    assert len(page.find_all("script")) == 1
    texts = [d.text for d in page.find("div", "pane-b").find_all("div", "text")]
    assert DANGEROUS in texts
    assert page.find("div", "pane-head").text == f"A {evil}"
    change = page.find("ul", "changes").find("li").text
    assert change.startswith("user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> ")


def test_the_page_names_turns_by_their_own_index_on_each_side() -> None:
    a = two_users([(USER, "hi"), (OTHER, "hello")])
    b = two_users([(OTHER, "hello"), (USER, "hi")])
    page = _page(a, b)
    first_a = page.find("div", "pane-a").find("section", "row")
    first_b = page.find("div", "pane-b").find("section", "row")
    assert first_a.find("a", "turn-label").text == "Turn 1"
    assert first_b.find("a", "turn-label").text == "Turn 2"
    assert first_a.find("div", "sender").text == "5511987654321"
