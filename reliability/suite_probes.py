"""The probes that live in the test suite, counted: what they tried, and that nothing broke.

Runs, in a pytest of its own with :mod:`reliability.counting` (Hypothesis
derandomized, so the counts are the same on every run and every machine with
the same libraries):

- every test Hypothesis drives: the properties written with ``@given``, and
  schemathesis's runs of each operation of the fake Graph API's and
  ``harness serve``'s OpenAPI documents (test cases counted as Hypothesis
  runs them);
- schemathesis's state machine of linked calls against ``harness serve``
  (it counts its own sequences and calls);
- the script-injection test of ``report.html`` in headless Chromium (it
  records its payloads and the fields it puts each one in). Chromium must be
  installed: ``apt-get install chromium``.

Run: ``python reliability/suite_probes.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
STATE_MACHINE = (
    "tests/channels/whatsapp/control/test_fuzz.py::"
    "test_linked_calls_never_meet_a_server_error_and_leave_the_readers_answering"
)
BROWSER = (
    "tests/harness/report/test_html_browser.py::"
    "test_no_script_injected_through_any_field_runs_in_the_browser"
)


@dataclass
class Counted:
    """One test of the run: what it tried, and how it ended."""

    test: str
    outcome: str
    examples: int
    failed: int
    recorded: dict[str, Any] = field(default_factory=dict)
    schemathesis: bool = False

    @property
    def ok(self) -> bool:
        """The test passed and no test case of it failed."""
        return self.outcome == "passed" and not self.failed


def _candidates() -> list[Path]:
    """The test files that can hold such tests: those that use Hypothesis or schemathesis."""
    found = []
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        if "hypothesis" in text or "schemathesis" in text:
            found.append(path)
    browser = ROOT / BROWSER.split("::")[0]
    return found if browser in found else [*found, browser]


def launch(out: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start the counted pytest run, writing the counts to ``out`` and its output to ``log``."""
    command = [
        *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        *("-p", "reliability.counting", "--counts-out", str(out), "--generative"),
        *("--also", STATE_MACHINE, "--also", BROWSER),
        *(str(p.relative_to(ROOT)) for p in _candidates()),
    ]
    # A missing browser fails the run instead of skipping what it would have counted.
    env = {**os.environ, "HARNESS_REQUIRE_BROWSER": "1", "PYTHONPATH": str(ROOT)}
    with log.open("wb") as sink:
        return subprocess.Popen(command, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, env=env)


def collect(process: subprocess.Popen[bytes], out: Path, log: Path) -> list[Counted]:
    """Wait for the run; its tests, or an exception quoting its output if it wrote no counts."""
    process.wait()
    if not out.exists():
        raise RuntimeError(f"the counted test run ended without counts:\n{log.read_text()}")
    schemathesis = {str(p.relative_to(ROOT)) for p in _candidates() if _uses_schemathesis(p)}
    results = []
    for line in out.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        results.append(
            Counted(
                test=data["test"],
                outcome=data["outcome"],
                examples=data["examples"],
                failed=data["failed"],
                recorded=data["recorded"],
                schemathesis=data["test"].split("::")[0] in schemathesis,
            )
        )
    return results


def _uses_schemathesis(path: Path) -> bool:
    return "import schemathesis" in path.read_text(encoding="utf-8")


def run() -> list[Counted]:
    """Run the counted tests and return them; print what broke, if anything did."""
    with tempfile.TemporaryDirectory(prefix="harness-suite-probes-") as tmp:
        out, log = Path(tmp) / "counts.jsonl", Path(tmp) / "pytest.log"
        results = collect(launch(out, log), out, log)
        for line in problems(results, log.read_text(encoding="utf-8", errors="replace")[-3000:]):
            print(line)
        return results


def _broke(tests: list[Counted]) -> str:
    bad = [t for t in tests if not t.ok]
    return f"{len(bad)} failed" if bad else "0 failed"


def summary(results: list[Counted]) -> list[str]:
    """One markdown table row per probe: Hypothesis properties, schemathesis, the browser."""
    browser = [t for t in results if t.test == BROWSER]
    machine = [t for t in results if t.test == STATE_MACHINE]
    operations = [t for t in results if t.schemathesis and t.test != STATE_MACHINE]
    properties = [t for t in results if t not in (*browser, *machine, *operations)]
    examples = sum(t.examples for t in properties)
    cases = sum(t.examples for t in operations)
    sequences = sum(int(t.recorded.get("sequences", 0)) for t in machine)
    calls = sum(int(t.recorded.get("calls", 0)) for t in machine)
    payloads = sum(int(t.recorded.get("payloads", 0)) for t in browser)
    fields = sum(int(t.recorded.get("fields", 0)) for t in browser)
    injected = "0 ran; no event handler or `javascript:` URL in the page; each shown as text"
    if not browser or not all(t.ok for t in browser):
        injected = "the browser test failed" if browser else "the browser test did not run"
    return [
        f"| Hypothesis properties ({len(properties)} tests written with `@given`: payloads, "
        "signing, chunking, redaction, fixtures, scenario files, bad input to the Graph and "
        f"control APIs ...), derandomized | {examples:,} examples | {_broke(properties)} |",
        f"| Schemathesis over the fake Graph API's and `harness serve`'s OpenAPI documents: "
        f"{len(operations)} operations alone, then sequences of linked calls | "
        f"{cases:,} generated requests; {sequences} sequences, {calls} linked calls | "
        f"{_broke([*operations, *machine])} (no 5xx, every answer as documented) |",
        f"| Script injection in `report.html`, opened in headless Chromium: {payloads} "
        f"payloads, each in {fields} fields | {payloads * fields} placements | {injected} |",
    ]


def problems(results: list[Counted], log: str) -> list[str]:
    """The tests that broke, and the end of the run's output, when any did."""
    bad = [f"{t.outcome}: {t.test}" for t in results if not t.ok]
    return [*bad, log] if bad or not results else []


def main() -> None:
    """Run, print one line per test and the rows; exit 1 if anything broke."""
    results = run()
    for t in results:
        print(f"{t.outcome:<7} {t.examples:5d} examples {t.recorded or ''} {t.test}")
    print()
    print("\n".join(summary(results)))
    sys.exit(0 if results and all(t.ok for t in results) else 1)


if __name__ == "__main__":
    main()
