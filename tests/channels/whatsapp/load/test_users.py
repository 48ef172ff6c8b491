"""How the agent's sends are counted against a user's turns."""

from __future__ import annotations

import asyncio

from channels.whatsapp.load import Choice, LoadStats, LoadUser, Template, TurnSpec, offered_choices

TEMPLATE = Template("chat", (TurnSpec("say", ("hi",)),))


def _user(stats: LoadStats) -> LoadUser:
    return LoadUser(0, "15550000000", TEMPLATE, stats)


async def test_the_first_send_of_a_turn_is_its_reply_timed_from_the_last_message() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    user.start_turn()
    user.posting(1.0)
    user.posting(1.5)  # a burst's second fragment
    user.received(b"a", 1.75)
    assert await user.answered(0.01)
    assert list(stats.latencies) == [0.25]
    assert stats.replied == 1


async def test_the_same_body_again_is_a_duplicate_and_another_body_an_extra_part() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    user.start_turn()
    user.posting(1.0)
    user.received(b"a", 1.1)
    user.received(b"b", 1.2)
    user.received(b"a", 1.3)
    user.received(b"b", 1.4)
    assert (stats.replied, stats.extra, stats.duplicated) == (1, 1, 2)


async def test_a_turn_without_a_send_is_lost_and_a_send_after_that_is_late() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    user.start_turn()
    user.posting(asyncio.get_running_loop().time())
    assert not await user.answered(0.01)
    user.received(b"a", 9.0)
    user.received(b"a", 9.1)
    assert (stats.lost, stats.late, stats.duplicated, stats.replied) == (1, 1, 1, 0)


async def test_a_send_before_the_user_wrote_is_unexpected() -> None:
    stats = LoadStats(start=0.0)
    _user(stats).received(b"a", 1.0)
    assert stats.unexpected == 1
    assert stats.replied == 0


async def test_a_new_turn_counts_its_own_reply_even_with_the_same_body() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    for at in (1.0, 2.0):
        user.start_turn()
        user.posting(at)
        user.received(b"same answer", at + 0.1)
    assert (stats.replied, stats.duplicated, stats.turns) == (2, 0, 2)


def test_a_tap_picks_the_offered_button_by_id_or_title_whatever_the_case() -> None:
    body = {
        "type": "interactive",
        "interactive": {
            "type": "button",
            "body": {"text": "Shall I book 19:00?"},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": "yes-1900", "title": "Confirm"}},
                    {"type": "reply", "reply": {"id": "change", "title": "Change"}},
                ]
            },
        },
    }
    user = _user(LoadStats(start=0.0))
    user.choices = offered_choices(body, "wamid.offer")
    assert user.choice("confirm") == Choice("button", "yes-1900", "Confirm", "wamid.offer")
    assert user.choice("change") == Choice("button", "change", "Change", "wamid.offer")
    assert user.choice("Cancel") is None


def test_a_list_offers_its_rows_and_a_text_offers_nothing() -> None:
    listed = {
        "type": "interactive",
        "interactive": {
            "type": "list",
            "action": {"sections": [{"rows": [{"id": "r1", "title": "18:00"}]}]},
        },
    }
    assert offered_choices(listed, "w") == (Choice("list", "r1", "18:00", "w"),)
    assert offered_choices({"type": "text", "text": {"body": "hi"}}, "w") == ()


async def test_a_turn_whose_only_send_was_refused_is_refused_by_its_code_not_lost() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    user.start_turn()
    user.posting(asyncio.get_running_loop().time())
    user.refused(130429)
    user.refused(131056)  # the first refusal names the turn
    assert not await user.answered(0.01)
    assert (stats.lost, stats.replied) == (0, 0)
    assert stats.refused_turns == {130429: 1}


async def test_a_send_accepted_after_a_refusal_is_the_turns_reply() -> None:
    stats = LoadStats(start=0.0)
    user = _user(stats)
    user.start_turn()
    user.posting(1.0)
    user.refused(130429)  # the agent backs off and sends again
    user.received(b"a", 1.5)
    assert await user.answered(0.01)
    assert (stats.lost, stats.replied, sum(stats.refused_turns.values())) == (0, 1, 0)


def test_a_refused_send_to_a_user_who_has_not_written_is_unexpected() -> None:
    stats = LoadStats(start=0.0)
    _user(stats).refused(131047)
    assert stats.unexpected == 1
    assert not stats.refused_turns
