"""Ids that look like Meta's and come out the same for the same seed."""

from __future__ import annotations

import base64
import random

import pytest

from channels.whatsapp.ids import (
    is_bsuid,
    is_wamid,
    new_bsuid,
    new_fbtrace_id,
    new_media_id,
    new_wamid,
)


def _draw(seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        new_wamid(rng, "5511987654321"),
        new_wamid(rng, "5511987654321", outbound=True),
        new_media_id(rng),
        new_bsuid(rng, "BR"),
        new_fbtrace_id(rng),
    ]


def test_same_seed_same_ids_other_seed_other_ids() -> None:
    assert _draw(7) == _draw(7)
    assert _draw(7) != _draw(8)


def test_wamid_form() -> None:
    rng = random.Random(1)
    ids = {new_wamid(rng, "15550001111") for _ in range(200)}
    assert len(ids) == 200
    for wamid in ids:
        assert is_wamid(wamid)
        blob = base64.b64decode(wamid.removeprefix("wamid."), validate=True)
        assert b"15550001111" in blob
    # The shape of the examples in the facts document.
    assert new_wamid(random.Random(1), "15550011111").startswith("wamid.HBgLMTU1NTAwMTExMTEVAgAS")
    assert new_wamid(random.Random(1), "5511987654321", outbound=True).startswith(
        "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYE"
    )


def test_known_ids_are_recognised() -> None:
    assert is_wamid("wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=")
    assert not is_wamid("HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=")
    assert not is_wamid("wamid.")
    assert is_bsuid("US.13491208655302741918")
    assert is_bsuid("BR.1234567890")
    assert not is_bsuid("us.1234")
    assert not is_bsuid("5511987654321")


def test_media_and_trace_ids() -> None:
    rng = random.Random(3)
    media = new_media_id(rng)
    assert media.isdigit()
    assert len(media) == 16
    trace = new_fbtrace_id(rng)
    assert len(trace) == 27
    assert trace.isascii()


def test_bsuid() -> None:
    bsuid = new_bsuid(random.Random(5), "IN")
    assert is_bsuid(bsuid)
    assert bsuid.startswith("IN.")
    with pytest.raises(ValueError, match="two capital letters"):
        new_bsuid(random.Random(5), "India")
