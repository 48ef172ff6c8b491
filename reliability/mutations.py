"""A mutation check of the modules whose bugs would make the harness lie.

Each mutation is a one-line fault put into a copy of the project (signing,
the 24-hour window, chunking, delivery and retries, the recorder and its
keys, redaction, the built-in invariants, the runner's verdicts). The tests
that guard that module run against the copy; a mutation they don't notice
is a survivor. The project itself is never touched.

Run: ``python reliability/mutations.py`` (every mutation, a few minutes on
two cores), ``--quick`` for the subset CI runs, ``--list`` to see them. It
prints each mutation with caught / SURVIVED and the score, and exits 1 when
a mutation survives or no longer applies (the code it mutates has changed:
update the list).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["MUTATIONS", "Mutation", "Outcome", "check", "main"]


@dataclass(frozen=True)
class Mutation:
    """One fault: ``before`` (found once in ``path``) becomes ``after``; ``tests`` should notice."""

    name: str
    path: str
    before: str
    after: str
    tests: tuple[str, ...]
    quick: bool = False


_SIGNING = ("tests/channels/whatsapp/test_signing.py",)
_WINDOW = ("tests/channels/whatsapp/test_window.py",)
_CHUNKS = ("tests/agents/booking/test_chunking.py",)
_DELIVERY = (
    "tests/channels/whatsapp/test_delivery.py",
    "tests/channels/whatsapp/test_simulator.py",
)
_RECORDER = ("tests/harness/test_llm_recorder.py", "tests/harness/test_tool_recorder.py")
_REDACTION = ("tests/harness/test_redaction.py",)
_INVARIANTS = ("tests/harness/suites/test_invariants.py",)
_RUNNER = ("tests/harness/suites/test_runner.py",)

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "signature over SHA-1",
        "channels/whatsapp/signing.py",
        "hmac.digest(key, body, hashlib.sha256)",
        "hmac.digest(key, body, hashlib.sha1)",
        _SIGNING,
        quick=True,
    ),
    Mutation(
        "signature check always passes",
        "channels/whatsapp/signing.py",
        "if not hmac.compare_digest(given, expected):",
        "if False:",
        _SIGNING,
    ),
    Mutation(
        "window still open at exactly 24 h",
        "channels/whatsapp/window.py",
        "return closes is not None and when < closes",
        "return closes is not None and when <= closes",
        _WINDOW,
        quick=True,
    ),
    Mutation(
        "an older message moves the window back",
        "channels/whatsapp/window.py",
        "if last is None or when > last:",
        "if True:",
        _WINDOW,
    ),
    Mutation(
        "replies cut at 4097",
        "agents/booking/chunking.py",
        "TEXT_LIMIT: Final = 4096",
        "TEXT_LIMIT: Final = 4097",
        _CHUNKS,
        quick=True,
    ),
    Mutation(
        "any answer under 500 counts as delivered",
        "channels/whatsapp/delivery.py",
        "            if status == 200:\n                return",
        "            if status is not None and status < 500:\n                return",
        _DELIVERY,
    ),
    Mutation(
        "no retries after a failed delivery",
        "channels/whatsapp/delivery.py",
        "self._offsets = (0.0, *config.retry_offsets())",
        "self._offsets = (0.0,)",
        _DELIVERY,
        quick=True,
    ),
    Mutation(
        "model keys depend on dict order",
        "harness/canonical.py",
        "_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS",
        "_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS",
        _RECORDER,
        quick=True,
    ),
    Mutation(
        "model keys of huge numbers depend on dict order",
        "harness/canonical.py",
        "sort_keys=True,",
        "sort_keys=False,",
        _RECORDER,
    ),
    Mutation(
        "timeout counted in the model key",
        "harness/llm_recorder.py",
        '"request_id", "timeout"}',
        '"request_id"}',
        _RECORDER,
        quick=True,
    ),
    Mutation(
        "idempotency_key counted in the model key",
        "harness/llm_recorder.py",
        '"extra_query", "idempotency_key",',
        '"extra_query",',
        _RECORDER,
    ),
    Mutation(
        "short secrets masked inside other text",
        "harness/redaction.py",
        "MIN_SUBSTRING: Final = 16",
        "MIN_SUBSTRING: Final = 1",
        _REDACTION,
        quick=True,
    ),
    Mutation(
        "one reply per burst lets two replies through",
        "harness/suites/builtin_invariants.py",
        "if len(groups) > max_replies:",
        "if len(groups) > max_replies + 1:",
        _INVARIANTS,
    ),
    Mutation(
        "free-form outside the window unflagged when the channel saw it closed",
        "harness/suites/builtin_invariants.py",
        "if event.in_window is False or refused:",
        "if refused:",
        _INVARIANTS,
        quick=True,
    ),
    Mutation(
        "a scenario with violations passes",
        "harness/suites/runner.py",
        'status: ScenarioStatus = "error" if error else ("failed" if violations else "passed")',
        'status: ScenarioStatus = "error" if error else "passed"',
        _RUNNER,
        quick=True,
    ),
    Mutation(
        "signature header named sha1=",
        "channels/whatsapp/signing.py",
        '_PREFIX = "sha256="',
        '_PREFIX = "sha1="',
        _SIGNING,
    ),
    Mutation(
        "a window of 25 hours",
        "channels/whatsapp/window.py",
        "length: float = 24 * 3600.0",
        "length: float = 25 * 3600.0",
        _WINDOW,
    ),
    Mutation(
        "retries stop after an hour",
        "channels/whatsapp/_defaults.py",
        "DEFAULT_RETRY_SCHEDULE: tuple[float, ...] = (0.0, 10.0, 60.0, 600.0, 3600.0)",
        "DEFAULT_RETRY_SCHEDULE: tuple[float, ...] = (0.0, 10.0, 60.0, 600.0)",
        _DELIVERY,
    ),
    Mutation(
        "the recorder always answers a repeated request with its first answer",
        "harness/tape.py",
        "_, answer = waiting.popleft()",
        "_, answer = waiting[0]",
        _RECORDER,
        quick=True,
    ),
    Mutation(
        "an api_key field is not a secret",
        "harness/redaction.py",
        'return words[-1] in _SENSITIVE_LAST_WORDS or words[-2:] == ["api", "key"]',
        "return words[-1] in _SENSITIVE_LAST_WORDS",
        _REDACTION,
    ),
    Mutation(
        "a yes before any proposal confirms",
        "harness/suites/builtin_invariants.py",
        "if user in proposed and _confirms(event, confirm, button):",
        "if _confirms(event, confirm, button):",
        _INVARIANTS,
    ),
    Mutation(
        "a redelivered yes confirms",
        "harness/suites/builtin_invariants.py",
        "elif isinstance(event, InboundMessage) and not event.duplicate:\n"
        "            said.setdefault(user, []).append(i)",
        "elif isinstance(event, InboundMessage):\n            said.setdefault(user, []).append(i)",
        _INVARIANTS,
    ),
    Mutation(
        "one confirmation allows two actions",
        "harness/suites/builtin_invariants.py",
        "            confirmed.pop(user, None)\n            said[user] = []",
        "            said[user] = []",
        _INVARIANTS,
    ),
    Mutation(
        "asking twice without an answer is re-asking",
        "harness/suites/builtin_invariants.py",
        "elif gives is None and user in asked and answers.get(user):",
        "elif gives is None and user in asked:",
        _INVARIANTS,
    ),
    Mutation(
        "the same side effect with other arguments is a repeat",
        "harness/suites/redelivery_invariants.py",
        "                and before.args == event.args\n",
        "",
        _INVARIANTS,
        quick=True,
    ),
    Mutation(
        "an answer twice as late as allowed is in time",
        "harness/suites/builtin_invariants.py",
        "if within is not None and waited > within:",
        "if within is not None and waited > within * 2:",
        _INVARIANTS,
    ),
    Mutation(
        "a scenario that errs counts as failed or passed",
        "harness/suites/runner.py",
        '"error" if error else ("failed" if violations else "passed")',
        '("failed" if violations else "passed")',
        _RUNNER,
    ),
    Mutation(
        "a failed run exits 0",
        "harness/cli/main.py",
        "EXIT_FAILED = 1",
        "EXIT_FAILED = 0",
        ("tests/harness/cli/test_cli.py",),
    ),
)


_PYTEST: tuple[str, ...] = (sys.executable, "-m", "pytest", "-q", "-x")
_PYTEST += ("-p", "no:randomly", "-p", "no:cacheprovider")


@dataclass(frozen=True)
class Outcome:
    """What the tests made of one mutation: ``caught``, ``survived`` or ``stale``."""

    mutation: Mutation
    verdict: str
    seconds: float


def _copy_project(into: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / name.decode()
        if source.is_file():
            target = into / name.decode()
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def check(mutations: tuple[Mutation, ...]) -> list[Outcome]:
    """Apply each mutation alone to a copy of the project and run its tests."""
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="mutations-") as tmp:
        copy = Path(tmp)
        _copy_project(copy)
        for mutation in mutations:
            started = time.monotonic()
            target = copy / mutation.path
            original = target.read_text()
            if original.count(mutation.before) != 1:
                outcomes.append(Outcome(mutation, "stale", 0.0))
                continue
            target.write_text(original.replace(mutation.before, mutation.after))
            try:
                run = subprocess.run(
                    [*_PYTEST, *mutation.tests],
                    cwd=copy,
                    capture_output=True,
                    timeout=600,
                )
                verdict = "caught" if run.returncode == 1 else "survived"
                if run.returncode not in (0, 1):  # the tests could not run: say so
                    verdict = f"error (pytest exit {run.returncode})"
            finally:
                target.write_text(original)
            outcomes.append(Outcome(mutation, verdict, time.monotonic() - started))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    """Run the check; print each mutation's verdict and the score."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the subset CI runs")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument(
        "--only", metavar="TEXT", help="only the mutations whose name or file contains TEXT"
    )
    args = parser.parse_args(argv)
    chosen = tuple(
        m
        for m in MUTATIONS
        if (m.quick or not args.quick)
        and (args.only is None or args.only in m.name or args.only in m.path)
    )
    if not chosen:
        parser.error(f"--only {args.only!r}: no mutation's name or file contains it")
    if args.list:
        for mutation in chosen:
            print(f"{mutation.path}: {mutation.name}")
        return 0
    outcomes = check(chosen)
    for outcome in outcomes:
        shown = "caught" if outcome.verdict == "caught" else outcome.verdict.upper()
        print(
            f"{shown:<9} {outcome.mutation.path}: {outcome.mutation.name} ({outcome.seconds:.1f} s)"
        )
    caught = sum(o.verdict == "caught" for o in outcomes)
    print(f"mutation score: {caught} of {len(outcomes)} caught")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
