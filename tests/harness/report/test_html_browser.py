"""report.html in a real browser: headless Chromium runs its script and draws it.

Needs Debian's ``chromium`` package. Without it the tests skip, unless
``CI`` or ``HARNESS_REQUIRE_BROWSER`` is set: then a missing browser fails.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.report import write_html
from tests.harness.report.browser import PNG_SIGNATURE, find_chromium, run_chromium
from tests.harness.report.dom import Element, parse
from tests.harness.report.injection import FIELDS, PAYLOADS, injected_run
from tests.harness.report.sample import booking_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html(booking_run(), tmp_path_factory.mktemp("report") / "report.html")


def _run(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_chromium(chromium, profile, *args)


def _dom(chromium: str, tmp_path: Path, url: str) -> Element:
    done = _run(chromium, tmp_path / "profile", "--dump-dom", url)
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return parse(done.stdout)


def test_the_browser_draws_every_scenario(chromium: str, report: Path, tmp_path: Path) -> None:
    dom = _dom(chromium, tmp_path, report.as_uri())
    sections = dom.find_all("section", "scenario")
    assert [s.attrs["data-status"] for s in sections] == ["failed", "error", "passed"]
    assert all("hidden" not in s.attrs for s in sections)
    assert dom.find("body").attrs["data-filter"] == "all"  # the script ran
    pressed = [a.attrs["data-filter"] for a in dom.find_all("a", aria_pressed="true")]
    assert pressed == ["all"]
    folded = dom.find("details", "passing")
    assert "open" not in folded.attrs  # the passes wait, folded, under the failures
    assert "hidden" not in folded.attrs

    failing = sections[0]
    violation = failing.find("div", "violation", data_rule="no_repeated_side_effects")
    turn = next(a for a in violation.ancestors() if "turn" in a.classes)
    assert (turn.attrs["data-turn"], turn.find("a", "turn-label").text) == ("1", "Turn 2")
    assert "violated" in turn.classes
    assert [t.attrs["data-tick"] for t in sections[2].find_all("span", "ticks")] == [
        "read",
        "delivered",
        "sent",
    ]
    assert failing.find("div", "duplicate").find("span", "chip").text == "duplicate delivery"
    assert sections[2].find("div", "tool").attrs["data-tool"] == "check_availability"
    assert sections[2].find("div", "divider-jump").text == "⏩ 25h later · wait 25h"
    # the user's <script> stayed text: the page's own script is the only one
    assert len(dom.find_all("script")) == 1
    assert "<script>alert" in failing.find("div", "msg-in").find("div", "text").text


@pytest.mark.parametrize(
    ("fragment", "shown"),
    [
        ("failed", {"failed"}),
        ("passed", {"passed"}),
        ("error", {"error"}),
        ("all", {"passed", "failed", "error"}),
    ],
)
def test_the_hash_filters_the_scenarios(
    chromium: str, report: Path, tmp_path: Path, fragment: str, shown: set[str]
) -> None:
    dom = _dom(chromium, tmp_path, f"{report.as_uri()}#{fragment}")
    visible = {
        s.attrs["data-status"]
        for s in dom.find_all("section", "scenario")
        if "hidden" not in s.attrs
    }
    assert visible == shown
    listed = {
        n.attrs["data-status"] for n in dom.find_all("li", "nav-item") if "hidden" not in n.attrs
    }
    assert listed == shown
    assert dom.find("a", "filter", data_filter=fragment).attrs["aria-pressed"] == "true"
    folded = dom.find("details", "passing")
    assert ("hidden" not in folded.attrs) == ("passed" in shown)
    assert ("open" in folded.attrs) == (fragment == "passed")  # asked for: unfolded


def test_an_anchor_to_a_passing_scenario_unfolds_it(
    chromium: str, report: Path, tmp_path: Path
) -> None:
    dom = _dom(chromium, tmp_path, f"{report.as_uri()}#scenario-1-happy-booking")
    assert "open" in dom.find("details", "passing").attrs


# Measures, in the page, every scenario name that its box cuts short or ellipsizes.
_MEASURE = """<script>
var cut = [];
document.querySelectorAll(".sidebar a, .scenario-head h2").forEach(function (box) {
  if (box.scrollWidth > box.clientWidth + 1 || getComputedStyle(box).textOverflow === "ellipsis") {
    cut.push(box.textContent);
  }
});
document.body.setAttribute("data-cut", JSON.stringify(cut));
</script>
</body>"""


def test_no_scenario_name_is_cut_short(chromium: str, tmp_path: Path) -> None:
    long_name = "the guest books a table for a party of twelve on new year's eve " * 3
    run = booking_run()
    named = run.model_copy(
        update={
            "scenarios": (*run.scenarios, run.scenarios[0].model_copy(update={"name": long_name}))
        }
    )
    page = write_html(named, tmp_path / "report.html")
    page.write_text(page.read_text(encoding="utf-8").replace("</body>", _MEASURE), encoding="utf-8")
    done = _run(
        chromium, tmp_path / "profile", "--window-size=1280,2000", "--dump-dom", page.as_uri()
    )
    dom = parse(done.stdout)
    assert dom.find("body").attrs["data-cut"] == "[]"
    links = [a.text for a in dom.find_all("li", "nav-item")]
    assert long_name.strip() in [text.strip() for text in links]


def test_a_scenario_anchor_shows_everything(chromium: str, report: Path, tmp_path: Path) -> None:
    dom = _dom(chromium, tmp_path, f"{report.as_uri()}#scenario-2-double-booking")
    assert all("hidden" not in s.attrs for s in dom.find_all("section", "scenario"))


def test_a_screenshot_of_the_report(chromium: str, report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    _run(
        chromium,
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        report.as_uri(),
    )
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width = int.from_bytes(data[16:20], "big")
    height = int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # a drawn page, not a blank one


def test_no_script_injected_through_any_field_runs_in_the_browser(
    chromium: str, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    page = write_html(injected_run(), tmp_path / "report.html")
    # Time for images to fail and timers to fire before the page is dumped.
    done = _run(
        chromium, tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()
    )
    assert "</html>" in done.stdout, done.stderr[-2000:]
    dom = parse(done.stdout)
    assert "data-pwned" not in dom.find("html").attrs  # no payload ran
    assert len(dom.find_all("script")) == 1  # the page's own
    handlers = [(e.tag, name) for e in dom.iter() for name in e.attrs if name.startswith("on")]
    assert handlers == []
    scripted = [
        (e.tag, name)
        for e in dom.iter()
        for name, value in e.attrs.items()
        if value.strip().lower().startswith("javascript:")
    ]
    assert scripted == []
    hidden = [p for p in PAYLOADS if p not in dom.text]  # each one shown, as text
    assert hidden == []
    record_property("payloads", len(PAYLOADS))
    record_property("fields", len(FIELDS))
