"""Ids that look like Meta's: the same for the same seed and run, new otherwise."""

from __future__ import annotations

import base64
import random
import typing

import pytest

from channels.whatsapp.ids import (
    bsuid_for,
    bulk_wamid,
    country_of,
    id_source,
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


@pytest.mark.parametrize("outbound", [False, True])
def test_a_bulk_wamid_has_the_shape_of_a_drawn_one(outbound: bool) -> None:
    rng = random.Random(4)
    ids = [bulk_wamid(rng, "5511987654321", outbound=outbound) for _ in range(300)]
    assert len(set(ids)) == 300
    again = random.Random(4)
    assert ids[:5] == [bulk_wamid(again, "5511987654321", outbound=outbound) for _ in range(5)]
    length = 18 if outbound else 20
    drawn = base64.b64decode(new_wamid(rng, "5511987654321", outbound=outbound)[6:])
    keys = []
    for wamid in ids:
        assert is_wamid(wamid)
        blob = base64.b64decode(wamid.removeprefix("wamid."), validate=True)
        assert len(blob) == len(drawn)
        assert blob[: -length - 1] == drawn[: -length - 1]
        keys.append(blob[-length - 1 : -1].decode("ascii"))
    # Every hex digit turns up in every place of the key.
    for place in zip(*keys, strict=True):
        assert set(place) == set("0123456789ABCDEF")


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


# -- ids across runs -------------------------------------------------------------------


def test_unseeded_sources_never_draw_the_same_ids() -> None:
    first, second = id_source(), id_source()
    assert new_wamid(first, "5511987654321") != new_wamid(second, "5511987654321")


def test_a_seed_gives_the_same_ids_only_within_one_run_id() -> None:
    def first_wamid(seed: int, run_id: str) -> str:
        return new_wamid(id_source(seed, run_id), "5511987654321")

    assert first_wamid(7, "run-a") == first_wamid(7, "run-a")
    assert first_wamid(7, "run-a") != first_wamid(7, "run-b")
    assert first_wamid(7, "run-a") != first_wamid(8, "run-a")
    # each purpose draws from a source of its own
    assert new_media_id(id_source(7, "run-a", "media")) != new_media_id(id_source(7, "run-a"))


def test_a_bsuid_belongs_to_its_number() -> None:
    ana, bo = bsuid_for("5511987654321"), bsuid_for("15551234567")
    assert ana == bsuid_for("5511987654321")
    assert ana != bo
    assert is_bsuid(ana)
    assert is_bsuid(bo)
    assert (ana[:3], bo[:3]) == ("BR.", "US.")
    assert len(ana) == len("US.13491208655302741918")
    # scoped to the business, as Meta's are
    assert bsuid_for("5511987654321", "waba-1") != bsuid_for("5511987654321", "waba-2")


@pytest.mark.parametrize(
    ("wa_id", "country"),
    [
        ("5511987654321", "BR"),
        ("+447700900123", "GB"),
        ("919876543210", "IN"),
        ("15551234567", "US"),
        ("971501234567", "AE"),
        ("5215512345678", "MX"),
        ("999123", "US"),  # no such calling code
    ],
)
def test_country_of_a_number(wa_id: str, country: str) -> None:
    assert country_of(wa_id) == country


def test_distinct_numbers_get_distinct_bsuids() -> None:
    numbers = [f"55119{n:08d}" for n in range(2000)]
    assert len({bsuid_for(n) for n in numbers}) == len(numbers)


@pytest.mark.parametrize("outbound", [False, True])
def test_a_wamid_draws_its_key_as_random_choice_does(outbound: bool) -> None:
    # Recorded runs hold wamids drawn from seeded generators: a faster draw must give
    # the ids the plain one gave, and leave the generator where it left it.
    for seed in range(200):
        fast, plain = random.Random(seed), random.Random(seed)
        wamid = new_wamid(fast, "5511987654321", outbound=outbound)
        key = "".join(plain.choice("0123456789ABCDEF") for _ in range(18 if outbound else 20))
        blob = base64.b64decode(wamid.removeprefix("wamid."))
        assert blob[-1 - len(key) : -1].decode() == key
        assert fast.getstate() == plain.getstate()


def test_a_generator_of_its_own_kind_draws_the_wamid_through_choice() -> None:
    class Counted(random.Random):
        def __init__(self, seed: int) -> None:
            super().__init__(seed)
            self.drawn = 0

        def choice(self, seq: typing.Any) -> typing.Any:
            self.drawn += 1
            return super().choice(seq)

    rng = Counted(7)
    new_wamid(rng, "5511987654321")
    assert rng.drawn == 20
