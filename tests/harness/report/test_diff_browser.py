"""The diff page in a real browser: Chromium aligns its rows and scrolls its panes together.

Needs Debian's ``chromium`` package. Without it the tests skip, unless
``CI`` or ``HARNESS_REQUIRE_BROWSER`` is set: then a missing browser fails.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.replay.diff import diff_conversations
from harness.report import write_diff_html
from tests.harness.replay.diff.bookings import DANGEROUS, booking
from tests.harness.report.browser import PNG_SIGNATURE, find_chromium, run_chromium
from tests.harness.report.dom import Element, parse

pytestmark = pytest.mark.browser

_WINDOW = "--window-size=1280,700"  # short enough that the panes have to scroll


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # B's second turn has an extra reply, so its row is taller than A's until aligned
    a = booking()
    b = booking(first=DANGEROUS, booked="Booked for 9pm", extra_reply="Anything else?")
    out = tmp_path_factory.mktemp("diff") / "diff.html"
    return write_diff_html(
        diff_conversations(a, b), a, b, out, title_a="recorded", title_b="replay"
    )


def _run(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_chromium(chromium, profile, *args)


def _dom(chromium: str, tmp_path: Path, url: str) -> Element:
    # the virtual time budget lets scroll events fire before the DOM is dumped
    done = _run(
        chromium, tmp_path / "profile", _WINDOW, "--virtual-time-budget=2000", "--dump-dom", url
    )
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return parse(done.stdout)


def _panes(dom: Element) -> tuple[Element, Element]:
    a, b = dom.find_all("div", "pane")
    return a, b


def test_the_browser_aligns_the_rows_of_both_panes(
    chromium: str, page: Path, tmp_path: Path
) -> None:
    dom = _dom(chromium, tmp_path, page.as_uri())
    body = dom.find("body")
    assert body.attrs["data-aligned"] == "true"  # the script ran
    assert body.attrs["data-view"] == "all"
    pressed = [a.attrs["data-view"] for a in dom.find_all("a", "view", aria_pressed="true")]
    assert pressed == ["all"]
    a, b = _panes(dom)
    rows_a, rows_b = a.find_all("section", "row"), b.find_all("section", "row")
    assert len(rows_a) == len(rows_b) == 3
    heights = []
    for row_a, row_b in zip(rows_a, rows_b, strict=True):
        assert row_a.attrs["data-row"] == row_b.attrs["data-row"]
        assert row_a.attrs["style"] == row_b.attrs["style"]  # same height: side by side
        assert row_a.attrs["style"].startswith("min-height: ")
        heights.append(float(row_a.attrs["style"].split()[1].removesuffix("px;")))
    assert all(h > 50 for h in heights)
    assert (a.attrs["data-top-row"], b.attrs["data-top-row"]) == ("1", "1")
    # the user's <script> stayed text: the page's own script is the only one
    assert len(dom.find_all("script")) == 1
    assert DANGEROUS in [t.text for t in b.find_all("div", "text")]


@pytest.mark.parametrize("anchor", ["turn-3", "turn-3-b"])
def test_scrolling_one_pane_scrolls_the_other(
    chromium: str, page: Path, tmp_path: Path, anchor: str
) -> None:
    # the script scrolls only the pane holding the anchor; the other must follow
    dom = _dom(chromium, tmp_path, f"{page.as_uri()}#{anchor}")
    a, b = _panes(dom)
    assert (a.attrs["data-top-row"], b.attrs["data-top-row"]) == ("3", "3")


def test_the_changed_view(chromium: str, page: Path, tmp_path: Path) -> None:
    dom = _dom(chromium, tmp_path, f"{page.as_uri()}#changed")
    assert dom.find("body").attrs["data-view"] == "changed"
    assert dom.find("a", "view", data_view="changed").attrs["aria-pressed"] == "true"
    assert dom.find("a", "view", data_view="all").attrs["aria-pressed"] == "false"


def test_a_screenshot_of_the_diff(chromium: str, page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "diff.png"
    _run(chromium, tmp_path / "profile", f"--screenshot={shot}", _WINDOW, page.as_uri())
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 700)
    assert len(data) > 40_000  # a drawn page, not a blank one
