"""The prompt debugger end to end, in headless Chromium: open, edit, replay, compare, save.

``harness ui`` runs as its own process on loopback; Playwright drives
Debian's Chromium (no browser download). Without Chromium the test skips,
unless ``CI`` or ``HARNESS_REQUIRE_BROWSER`` is set: then it fails.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.harness.report.browser import find_chromium

pytestmark = [pytest.mark.browser, pytest.mark.network, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "scenarios" / "booking" / "fixtures"
PACKAGED = ROOT / "agents" / "booking" / "prompts" / "system.md"
NAMES = ("confirm_by_typing_yes", "happy_confirm_button", "wheelchair_constraint_across_turns")
ORIGINAL = PACKAGED.read_text("utf-8")
RENAMED = ORIGINAL.replace("booking assistant of $business", "booking assistant of Chez Zed")
FORGETFUL = ORIGINAL.replace("\n$profile\n", "\n")


@pytest.fixture
def prompt_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    shutil.copy(PACKAGED, folder / "system.md")
    return folder


def _pump(stream: IO[str], lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.fixture
def server(prompt_dir: Path, tmp_path: Path) -> Iterator[str]:
    """``harness ui`` on a free port, and the URL it prints once it listens."""
    command = [
        sys.executable, "-m", "harness", "ui", *(str(FIXTURES / n) for n in NAMES),
        "--port", "0", "--agent-setting", f"BOOKING_PROMPT_DIR={prompt_dir}",
    ]  # fmt: skip
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=tmp_path,  # no project here: the agent is the one the fixtures were recorded with
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert process.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    # a thread reads the lines as they come; it ends when the process closes its output
    reader = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        url = None
        while url is None and (left := deadline - time.monotonic()) > 0:
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                break
            if "serving on " in line:
                url = line.split("serving on ", 1)[1].split()[0]
        assert url is not None, f"harness ui did not start: {errors.read_text()[-2000:]}"
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        process.stdout.close()


@pytest.fixture
def page() -> Iterator[Page]:
    chromium = find_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()


def test_open_edit_replay_see_the_changed_turn_then_save(
    server: str, page: Page, prompt_dir: Path
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(server)
    rows = page.locator("tr.fixture")
    expect(rows).to_have_count(3)
    page.fill("#search", "typing")
    expect(page.locator("tr.fixture:visible")).to_have_count(1)

    page.click("text=booking confirmed by typing yes")
    expect(page).to_have_url(f"{server}fixtures/0")
    recorded = page.frame_locator("#chat")
    expect(recorded.locator(".msg-out").first).to_contain_text("Casa Lucia")

    editor = page.locator("#prompt-system")
    expect(editor).to_have_value(ORIGINAL)
    editor.fill(RENAMED)
    expect(page.locator("label[for=prompt-system] .dirty")).to_be_visible()

    page.click("#replay")
    page.wait_for_selector("body[data-replay=done]")
    expect(page.locator("#verdict")).to_contain_text("CHANGED: 1 turn changed (1)")
    compared = page.frame_locator("#chat")
    expect(compared.locator(".pane-b .row.changed")).to_have_count(1)
    expect(compared.locator(".pane-b .row.changed")).to_contain_text("Chez Zed")
    expect(compared.locator(".pane-a .row.changed")).to_contain_text("Casa Lucia")
    # nothing is written until Save
    assert (prompt_dir / "system.md").read_text("utf-8") == ORIGINAL
    assert not (prompt_dir / "system.md.bak").exists()

    page.click("#save")
    page.wait_for_selector("body[data-saved=true]")
    expect(page.locator("#status")).to_contain_text(f"saved {prompt_dir / 'system.md'}")
    expect(page.locator("label[for=prompt-system] .dirty")).to_be_hidden()
    assert (prompt_dir / "system.md").read_text("utf-8") == RENAMED
    assert (prompt_dir / "system.md.bak").read_text("utf-8") == ORIGINAL
    assert errors == []


def test_replay_all_tables_which_changed_and_which_now_fail(server: str, page: Page) -> None:
    page.goto(server)
    page.locator("#prompt-system").fill(FORGETFUL)
    page.click("#replay-all")
    page.wait_for_selector("body[data-replay=done]")
    table = page.locator("#all-results tbody tr")
    expect(table).to_have_count(3)
    wheelchair = page.locator("#all-results tr[data-fixture='2']")
    expect(wheelchair).to_have_attribute("data-newly-failing", "true")
    expect(wheelchair).to_contain_text("constraint_honored")
    happy = page.locator("#all-results tr[data-fixture='1']")
    expect(happy).to_have_attribute("data-changed", "false")
    expect(page.locator("#all-summary")).to_have_text(
        "3 replayed: 2 changed, 1 now fail an invariant"
    )
