"""Splitting long replies: never over the limit, words kept whole and in order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.booking import TEXT_LIMIT, split_message
from harness.exceptions import ConfigError

_words = st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=300)


@given(text=_words, limit=st.integers(min_value=1, max_value=40))
def test_pieces_fit_and_keep_every_character_but_the_cut_whitespace(text: str, limit: int) -> None:
    pieces = split_message(text, limit)
    assert all(0 < len(piece) <= limit for piece in pieces)
    assert "".join("".join(p.split()) for p in pieces) == "".join(text.split())


@given(
    words=st.lists(st.text(alphabet="abcdefghé€😀", min_size=1, max_size=12), max_size=200),
    separators=st.lists(st.sampled_from([" ", "\n", "\n\n", "  ", "\t"]), min_size=1),
    limit=st.integers(min_value=12, max_value=200),
)
def test_joining_the_pieces_restores_the_words(
    words: list[str], separators: list[str], limit: int
) -> None:
    text = "".join(w + separators[i % len(separators)] for i, w in enumerate(words))
    pieces = split_message(text, limit)
    assert all(len(piece) <= limit for piece in pieces)
    assert " ".join(pieces).split() == text.split()


# Meta's limit, written as Meta documents it rather than read from the code under test.
META_TEXT_LIMIT = 4096


@given(size=st.integers(min_value=0, max_value=3 * META_TEXT_LIMIT // 5))
def test_the_default_limit_is_metas_4096(size: int) -> None:
    text = " ".join(["word"] * size)
    pieces = split_message(text)
    assert all(len(piece) <= META_TEXT_LIMIT for piece in pieces)
    assert " ".join(pieces) == text


@pytest.mark.parametrize(
    ("length", "pieces"),
    [
        (4095, [4095]),
        (4096, [4096]),
        (4097, [4096, 1]),
        (8192, [4096, 4096]),
        (8193, [4096] * 2 + [1]),
    ],
)
def test_a_reply_is_cut_exactly_at_4096_characters(length: int, pieces: list[int]) -> None:
    # One unbroken word: the only cut is the hard one, exactly at the limit.
    assert [len(p) for p in split_message("é" * length)] == pieces
    assert TEXT_LIMIT == META_TEXT_LIMIT


def test_words_fill_a_piece_up_to_exactly_4096() -> None:
    first = "a" * 4090 + " bcdef"  # 4096 characters: fits whole
    assert split_message(first + " g") == [first, "g"]
    assert split_message("a" * 4090 + " bcdefg") == ["a" * 4090, "bcdefg"]


def test_short_text_is_one_piece_and_blank_text_none() -> None:
    assert split_message("  hello there \n") == ["hello there"]
    assert split_message(" \n\t ") == []


def test_a_word_longer_than_the_limit_is_split_hard() -> None:
    assert split_message("abcdefghij klm", 4) == ["abcd", "efgh", "ij", "klm"]


def test_a_paragraph_break_in_the_second_half_is_preferred() -> None:
    text = "one two three\n\nfour five six seven"
    assert split_message(text, 20) == ["one two three", "four five six seven"]


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ConfigError):
        split_message("text", 0)
