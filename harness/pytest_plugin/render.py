"""How a failure reads in pytest's output: the scenario, the turn, the rule, the messages.

Not a traceback: what broke is in the conversation, so the report shows the
conversation's lines that show it and, for a scenario file, the shortest
YAML that reproduces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harness.report.causes import causes
from harness.results import ScenarioResult, Violation
from harness.trace import Conversation

__all__ = ["render_result", "render_violations"]


def render_violations(
    violations: Iterable[Violation], conversation: Conversation | None = None
) -> list[str]:
    """Each cause's headline (rule, turn, line, what), the messages involved, what followed.

    With the ``conversation`` they were found in, violations with one cause
    are one headline, the others listed under it (:mod:`harness.report.causes`).
    """
    lines: list[str] = []
    for cause in causes(list(violations), conversation):
        lines.append(f"✗ {cause.lead.headline()}")
        lines.extend(f"    {message}" for message in cause.lead.messages)
        if cause.follows:
            lines.append(f"  {len(cause.follows)} more from the same cause:")
            lines.extend(f"    - {follow.headline()}" for follow in cause.follows)
    return lines


def render_result(result: ScenarioResult, divergences: Sequence[str] = ()) -> str:
    """A scenario that did not pass, as the text pytest prints for its item.

    ``divergences`` are the lines saying where a replay left its recording:
    they come first, since what failed after them follows from them, and
    the headline says the replay diverged rather than counting violations.
    Against an agent at a URL, the numbers the users played by are named
    too (the reproduction keeps the numbers the scenario wrote).
    """
    where = f" ({result.path})" if result.path else ""
    lines = [f"scenario {result.name!r}{where}"]
    count = len(result.violations)
    violations = f"{count} violation{'' if count == 1 else 's'}"
    if result.status == "error":
        lines.append(f"could not be run: {result.error or 'no reason given'}")
    elif divergences:
        lines.append("failed: the replay diverged" + (f", then {violations}" if count else ""))
    else:
        lines.append(f"failed: {violations}")
    lines.append("")
    lines.extend(divergences)
    lines.extend(render_violations(result.violations, result.conversation))
    lines.extend(f"agent: {line}" for line in result.agent_errors)
    lines.extend(f"stray send: {stray.headline()}" for stray in result.stray_sends)
    for skip in result.skipped:
        lines.append(f"- skipped {skip.headline()}")
    if result.numbers:  # an agent at a URL: the scenario's users played numbers of their own
        seen = ", ".join(f"{name} {number}" for name, number in result.numbers.items())
        lines.append(f"the agent saw the users as: {seen}")
    if result.reproduce:
        lines.extend(["", "reproduce with:"])
        lines.extend(f"  {line}" for line in result.reproduce.rstrip("\n").splitlines())
    return "\n".join(lines).rstrip("\n")
