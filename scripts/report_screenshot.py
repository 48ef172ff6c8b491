"""The picture of a report in the README and the docs, taken from a real run.

Runs the bundled suite against the bundled booking agent with one planted
regression switched on (so the report leads with a failure), opens the run's
``report.html`` in headless Chromium (Debian's ``chromium``, driven by
Playwright; no browser download) and saves what a reader sees first as a PNG.

Run from anywhere: ``python scripts/report_screenshot.py`` writes
``docs/assets/report.png`` (``--out`` for another file).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "assets" / "report.png"
REGRESSION = "no_dedupe"  # a redelivered Confirm books twice: the report's first failure
WIDTH, HEIGHT = 1280, 860

__all__ = ["DEFAULT_OUT", "HEIGHT", "WIDTH", "run_report", "screenshot"]


def run_report(into: Path) -> Path:
    """Run the bundled suite with the planted regression; the report.html it wrote."""
    harness = Path(sys.executable).parent / "harness"
    done = subprocess.run(
        [
            str(harness),
            "run",
            "--agent-setting",
            f"BOOKING_REGRESSIONS={REGRESSION}",
            "--report-dir",
            str(into),
            "scenarios",  # named relative to the project, so the report shows short paths
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    report = into / "report.html"
    if done.returncode != 1 or not report.is_file():  # 1: the regression was caught
        raise SystemExit(f"harness run exited {done.returncode}, expected 1:\n{done.stderr}")
    return report


def screenshot(report: Path, out: Path, chromium: str) -> Path:
    """Save what Chromium shows of ``report`` at the top of the page as a PNG."""
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=str(out))
        finally:
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the PNG to write")
    parser.add_argument("--chromium", default=None, help="the browser (default: chromium)")
    args = parser.parse_args(argv)
    chromium = args.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        message = "error: headless Chromium is not installed (apt-get install chromium)"
        print(message, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        out = screenshot(run_report(Path(folder)), args.out, chromium)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
