"""Secrets grep: distinctive secrets given to the harness never appear in what it writes or prints.

Three runs, each handed its own made-up secrets (app secrets, verify tokens,
access tokens, a model API key), then every file they wrote and everything
they printed is searched for each secret, byte for byte:

- ``harness run`` of the bundled suite with ``--report-dir`` (report.json,
  junit.xml, report.html);
- ``harness record`` of a scenario, the agent given an API key and an access
  token as settings (the fixture's every file);
- ``harness proxy`` between the simulator and the reference agent for a chat
  (the fixture's every file, the proxy's output).

Run: ``python reliability/secrets_grep.py``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reliability.kills import proxy_chat  # noqa: E402  # after the path tweak

SECRETS = {
    "app secret": "app-secret-Zq81vXw0",
    "verify token": "verify-token-Kp27rYt4",
    "access token": "access-token-Hm55nBd9QwErTy",
    "model API key": "sk-ant-api03-Lx44uIo6PaSdFg",
    "proxy app secret": "proxy-secret-Wc93eRt1",
    "proxy verify token": "proxy-verify-Jn62hGf8",
    "proxy access token": "proxy-access-Tb17kLm3ZxCv",
}


@dataclass
class Search:
    """One command's outputs searched for the secrets it was given."""

    command: str
    files: int
    found: list[str]


def _search(command: str, roots: list[Path], printed: bytes, secrets: list[str]) -> Search:
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    blobs = [p.read_bytes() for p in files] + [printed]
    found = [s for s in secrets if any(s.encode() in blob for blob in blobs)]
    return Search(command, len(files) + 1, found)


def _harness(*args: str, cwd: Path) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return done.stdout + done.stderr


def run() -> list[Search]:
    """Run the three commands and search what they left."""
    results = []
    with tempfile.TemporaryDirectory(prefix="harness-secrets-") as tmp:
        work = Path(tmp)
        reports = work / "reports"
        printed = _harness(
            *("run", str(ROOT / "scenarios" / "booking"), "--report-dir", str(reports)),
            *("--app-secret", SECRETS["app secret"], "--verify-token", SECRETS["verify token"]),
            *("--access-token", SECRETS["access token"]),
            cwd=ROOT,
        )
        given = [SECRETS["app secret"], SECRETS["verify token"], SECRETS["access token"]]
        results.append(_search("harness run --report-dir", [reports], printed, given))

        fixture = work / "recorded"
        printed = _harness(
            *("record", str(ROOT / "scenarios" / "booking" / "happy_confirm_button.yaml")),
            *("--out", str(fixture)),
            *("--agent-setting", f"ANTHROPIC_API_KEY={SECRETS['model API key']}"),
            *("--agent-setting", f"WHATSAPP_ACCESS_TOKEN={SECRETS['access token']}"),
            cwd=ROOT,
        )
        given = [SECRETS["model API key"], SECRETS["access token"]]
        results.append(_search("harness record", [fixture], printed, given))

        proxied = work / "proxied"
        printed, _ = asyncio.run(
            proxy_chat(
                proxied,
                app_secret=SECRETS["proxy app secret"],
                verify_token=SECRETS["proxy verify token"],
                access_token=SECRETS["proxy access token"],
            )
        )
        given = [
            SECRETS["proxy app secret"],
            SECRETS["proxy verify token"],
            SECRETS["proxy access token"],
        ]
        results.append(_search("harness proxy", [proxied], printed, given))
    return results


def summary(results: list[Search]) -> list[str]:
    """One markdown table row for the whole grep."""
    secrets = sum(1 for _ in SECRETS)
    files = sum(r.files for r in results)
    found = sorted({s for r in results for s in r.found})
    return [
        f"| {secrets} distinctive secrets given to `harness run`, `record` and `proxy`, "
        f"searched in every file written and all output | {files} outputs | "
        f"{len(found)} secrets found |"
    ]


def main() -> None:
    """Search, print what was searched, exit 1 if any secret was found."""
    results = run()
    for r in results:
        verdict = "none found" if not r.found else f"FOUND: {', '.join(r.found)}"
        print(f"{r.command:<26} {r.files:3d} outputs searched: {verdict}")
    print()
    print("\n".join(summary(results)))
    # A command that wrote nothing proves nothing: that is a failure of the probe.
    empty = [r.command for r in results if r.files <= 1]
    if empty:
        print(f"wrote nothing to search: {', '.join(empty)}")
    sys.exit(0 if not any(r.found for r in results) and not empty else 1)


if __name__ == "__main__":
    main()
