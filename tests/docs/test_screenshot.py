"""The picture of a report in the README is taken from a real run, in headless Chromium."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from scripts.report_screenshot import DEFAULT_OUT, HEIGHT, WIDTH, run_report, screenshot
from tests.harness.report.browser import PNG_SIGNATURE, find_chromium

ROOT = Path(__file__).resolve().parents[2]


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


def test_the_run_behind_the_picture_fails_on_the_planted_bug(tmp_path: Path) -> None:
    report = run_report(tmp_path)
    html = report.read_text(encoding="utf-8")
    assert "no_repeated_side_effects" in html
    assert (tmp_path / "junit.xml").is_file()


@pytest.mark.browser
@pytest.mark.slow
def test_the_script_saves_the_report_as_chromium_draws_it(tmp_path: Path) -> None:
    chromium = find_chromium()
    out = screenshot(run_report(tmp_path / "run"), tmp_path / "report.png", chromium)
    assert _png_size(out) == (WIDTH, HEIGHT)


def test_the_committed_picture_is_the_scripts_and_the_pages_show_it() -> None:
    assert DEFAULT_OUT == ROOT / "docs" / "assets" / "report.png"
    assert _png_size(DEFAULT_OUT) == (WIDTH, HEIGHT)
    assert "](docs/assets/report.png)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](assets/report.png)" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
