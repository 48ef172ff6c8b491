"""A replay's divergence lines: each said once, with how often it came."""

from __future__ import annotations

from harness.replay._result_lines import once_each


def test_a_divergence_met_again_is_one_line_saying_how_often() -> None:
    asked = [
        "turn 3: replay diverged: messages: 9 now, 11 recorded",
        "turn 3: replay diverged: system prompt differs",
        "turn 3: replay diverged: messages: 9 now, 11 recorded",
    ]
    assert once_each(asked) == (
        "turn 3: replay diverged: messages: 9 now, 11 recorded (2 times)",
        "turn 3: replay diverged: system prompt differs",
    )
    assert once_each(asked[:2]) == tuple(asked[:2])
