"""RELIABILITY.md, regenerated: every probe run, its table printed.

Runs the SIGKILL trials (:mod:`reliability.kills`) and the secrets grep
(:mod:`reliability.secrets_grep`), and prints RELIABILITY.md: what was tried,
how many times, and what was lost. ``--write`` replaces the file;
``--check`` exits 1 if the file differs from what the probes give now (CI
runs that), or if any probe lost anything.

Run: ``python reliability/report.py [--write | --check]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reliability import kills, secrets_grep  # noqa: E402  # after the path tweak

FILE = ROOT / "RELIABILITY.md"

HEADER = """\
# Reliability

What the harness was put through, how many times, and what was lost. A testing tool that
loses a recording or leaks a secret is worse than none, so every row must say nothing was
lost. This file is printed by `python reliability/report.py --write` from the probes in
`reliability/`, and CI checks it (`--check`) against a fresh run of them.

| Fault, bad input or attack | Tries | What was lost |
| --- | --- | --- |
"""

FOOTER = """
Further probes run with the tests (`pytest`): schemathesis against the fake Graph API's
`/openapi.json` (no 5xx), Meta's own OpenAPI examples and schemas
(`tests/channels/whatsapp/conformance/`), Hypothesis properties of payloads, signing,
chunking, redaction and fixture loading, a SIGKILL of the proxy mid-conversation
(`tests/integration/test_proxy_chain.py`), Redis with injected latency
(`tests/integration/test_real_io.py`), and script injection in the HTML reports in headless
Chromium (`tests/harness/report/test_html_browser.py`).
"""


def render(rows: list[str]) -> str:
    """The whole file for these table rows."""
    return HEADER + "\n".join(rows) + "\n" + FOOTER


def main(argv: list[str] | None = None) -> None:
    """Run the probes; print, write or check the file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace RELIABILITY.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if RELIABILITY.md differs")
    parser.add_argument("--trials", type=int, default=20)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the agent's complaints about the killed proxy

    trials = asyncio.run(kills.run(args.trials, seed=7))
    searches = secrets_grep.run()
    text = render(kills.summary(trials) + secrets_grep.summary(searches))
    lost = not all(t.ok for t in trials) or any(s.found for s in searches)
    if args.write:
        FILE.write_text(text, encoding="utf-8")
        print(f"wrote {FILE}")
    elif args.check:
        if FILE.read_text(encoding="utf-8") != text:
            print(f"{FILE.name} differs from what the probes give now:\n\n{text}")
            sys.exit(1)
        print(f"{FILE.name} matches the probes")
    else:
        print(text)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
