"""What a person watching ``harness run`` sees: a progress bar, then a summary.

:class:`SuiteProgress` shows a bar with the scenario count, the scenario in
flight and the pass/fail counts on a terminal, and falls back to one plain
line per scenario (``PASS  happy booking (0.12s)``) when the output is a
file or a CI log. :func:`print_summary` prints a table of the scenarios that
failed, with their files (the passing ones are one line, ``12 passed``), and,
for each scenario that did not pass, its violations by cause (the one that
names the cause leads, with the conversation lines that show it, and those
that follow from it are listed under it; see :mod:`harness.report.causes`)
and the YAML that reproduces the failure, and for each scenario its channel
could not play (or played in part) what was skipped and why, and what the
agent sent to numbers that are none of the scenario's users, then who
answered the run's model calls (``model: 57 model calls: the offline
stand-in (no model), asked for claude-sonnet-4-6``). Nothing here
depends on colour: every status is also written as a word, and off a
terminal no line is ever wrapped (:func:`make_console`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from harness.report.answers import run_models
from harness.report.causes import scenario_causes
from harness.results import RunResult, ScenarioResult
from harness.trace import DeliveryAttempt

__all__ = ["SuiteProgress", "make_console", "print_summary", "result_line"]

_LABELS = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "skipped": "SKIP",
    "inconclusive": "INCONCLUSIVE",
}
_STYLES = {
    "passed": "green",
    "failed": "bold red",
    "error": "bold magenta",
    "skipped": "yellow",
    "inconclusive": "bold cyan",
}
_CURRENT_WIDTH = 40


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


#: How wide a console that is not a terminal is: so wide that nothing is ever wrapped.
_UNWRAPPED = 1_000_000


def make_console(**options: Any) -> Console:
    """A rich console (``options`` as for ``Console``) that never breaks a line off a terminal.

    On a terminal rich wraps to the window; piped or redirected it would
    wrap at 80 columns, breaking a long message, a JSON argument or a table
    row across lines that ``grep`` and log readers then see in pieces. Off a
    terminal this console writes every line whole, however long.
    """
    console = Console(**options)
    if not console.is_terminal:
        console.soft_wrap = True
        console.width = _UNWRAPPED
    return console


def result_line(result: ScenarioResult) -> str:
    """One line for one scenario: its status word, its name, and why it did not pass.

    A scenario the agent sent to numbers that are none of its users says so
    at the end (``; the agent sent to 15550009999, none of its users``).
    """
    label = f"{_LABELS[result.status]:<5} {result.name}"
    if result.status == "skipped":
        reason = result.skipped[0].reason if result.skipped else "not played"
        return f"{label}: {reason}"
    strays = _strays_note(result)
    if result.status == "inconclusive" and result.judgement is not None:
        return f"{label}: {result.judgement.headline()}{strays}"
    if result.status == "passed":
        if result.skipped:
            what = ", ".join(dict.fromkeys(skip.what for skip in result.skipped))
            return f"{label} ({result.duration_s:.2f}s; skipped: {what}){strays}"
        return f"{label} ({result.duration_s:.2f}s){strays}"
    if result.status == "failed":
        if not result.violations:
            return f"{label}: failed{strays}"
        found = scenario_causes(result)
        notes = [f"+{len(found[0].follows)} from the same cause"] if found[0].follows else []
        notes += [f"+{sum(len(c.violations) for c in found[1:])} more"] if found[1:] else []
        extra = f" ({', '.join(notes)})" if notes else ""
        return f"{label}: {found[0].lead.headline()}{extra}{strays}"
    return f"{label}: {_first_line(result.error or '') or 'could not be run'}{strays}"


def _webhook_note(result: ScenarioResult) -> str | None:
    """How many webhook POSTs the agent did not answer with a 200, and what came instead.

    ``webhook: 3 of 4 POSTs were not answered 200 (500 ×3): Meta delivers them
    again``, or None when every POST was answered 200 (or none was made). A 403
    among them adds its likeliest cause: the agent checks the signature with
    another app secret than the harness signs with.
    """
    if result.conversation is None:
        return None
    attempts = [e for e in result.conversation.events if isinstance(e, DeliveryAttempt)]
    failed = Counter(
        str(a.status_code) if a.status_code is not None else (a.error or "no answer")
        for a in attempts
        if not a.ok
    )
    if not failed:
        return None
    answers = ", ".join(f"{answer} ×{count}" for answer, count in failed.most_common())
    hint = (
        "; 403: the harness signs each POST with the app secret it was given (--app-secret), "
        "and the agent may check X-Hub-Signature-256 with another"
        if "403" in failed
        else ""
    )
    return (
        f"webhook: {failed.total()} of {len(attempts)} POSTs were not answered 200 "
        f"({answers}): Meta delivers them again{hint}"
    )


def _model_note(result: ScenarioResult) -> str | None:
    """How many of the agent's model calls through the harness got no answer, and why.

    ``model: 3 of 3 calls got no answer (502: the harness could not get an
    answer from https://api.openai.com/v1: ... ×3)``; None when all were answered.
    """
    if result.conversation is None:
        return None
    calls = result.conversation.llm_exchanges()
    failed = Counter(e.error for e in calls if e.error is not None)
    if not failed:
        return None
    why = ", ".join(f"{error} ×{count}" for error, count in failed.most_common())
    return f"model: {failed.total()} of {len(calls)} calls got no answer ({why})"


def _strays_note(result: ScenarioResult) -> str:
    """``; the agent sent to 15550009999, none of its users``, or nothing."""
    numbers = ", ".join(dict.fromkeys(stray.to for stray in result.stray_sends))
    return f"; the agent sent to {numbers}, none of its users" if numbers else ""


class SuiteProgress:
    """Progress of a suite run, updated by the runner as scenarios start and finish.

    Use it as a context manager; call :meth:`start` when a scenario begins
    (optional: it names the scenario in flight) and :meth:`advance` with its
    result when it ends. On a terminal it draws a rich progress bar and
    prints failures above it as they happen; elsewhere (``enabled=False``,
    or a console that is not a terminal) it prints one line per scenario.
    With ``from_first_result`` the bar (and the thread that redraws it)
    starts with the first result instead of on entry: a run in worker
    processes forks them first, and only while no other thread is alive.
    """

    def __init__(
        self,
        total: int,
        *,
        console: Console | None = None,
        enabled: bool | None = None,
        transient: bool = False,
        from_first_result: bool = False,
    ) -> None:
        self.console = console if console is not None else make_console()
        self.total = total
        self.enabled = self.console.is_terminal if enabled is None else enabled
        self.passed = 0
        self.failed = 0
        self.errors = 0
        self.skipped = 0
        self._running: list[str] = []
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._waiting = from_first_result
        if self.enabled:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(
                    "[green]{task.fields[passed]} passed[/] "
                    "[red]{task.fields[failed]} failed[/] "
                    "[magenta]{task.fields[errors]} errors[/]"
                ),
                TimeElapsedColumn(),
                console=self.console,
                transient=transient,
            )

    @property
    def done(self) -> int:
        """How many scenarios have finished."""
        return self.passed + self.failed + self.errors + self.skipped

    def __enter__(self) -> SuiteProgress:
        if not self._waiting:
            self._draw()
        return self

    def _draw(self) -> None:
        """Start the bar (and rich's thread that redraws it)."""
        self._waiting = False
        if self._progress is not None:
            self._progress.start()
            self._task = self._progress.add_task(
                self._description(), total=self.total, passed=0, failed=0, errors=0
            )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._running.clear()
            self._update()
            self._progress.stop()

    def start(self, name: str) -> None:
        """Note that a scenario began, so the bar can name it."""
        self._running.append(name)
        self._update()

    def advance(self, result: ScenarioResult) -> None:
        """Count one finished scenario and show its outcome."""
        if self._waiting:
            self._draw()
        self._count(result, 1)
        if result.name in self._running:
            self._running.remove(result.name)
        line = result_line(result)
        if self._progress is None:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            return
        if result.status not in ("passed", "skipped"):
            self._progress.console.print(
                Text(line, style=_STYLES[result.status]), highlight=False, soft_wrap=True
            )
        self._update(advance=1)

    def revise(self, before: ScenarioResult, after: ScenarioResult) -> None:
        """A scenario shown as ``before`` ended as ``after`` (the agent sent something late)."""
        self._count(before, -1)
        self._count(after, 1)
        line = f"{result_line(after)} (was {_LABELS[before.status].strip()})"
        if self._progress is None:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            return
        self._progress.console.print(
            Text(line, style=_STYLES[after.status]), highlight=False, soft_wrap=True
        )
        self._update()

    def _count(self, result: ScenarioResult, change: int) -> None:
        if result.status == "passed":
            self.passed += change
        elif result.status == "failed":
            self.failed += change
        elif result.status == "skipped":
            self.skipped += change
        else:
            self.errors += change

    def _description(self) -> str:
        if not self._running:
            return "scenarios" if self.done < self.total else "done"
        current = self._running[0]
        if len(current) > _CURRENT_WIDTH:
            current = current[: _CURRENT_WIDTH - 1] + "…"
        more = len(self._running) - 1
        return f"{current} (+{more})" if more else current

    def _update(self, advance: int = 0) -> None:
        if self._progress is None or self._task is None:
            return
        self._progress.update(
            self._task,
            advance=advance,
            description=self._description(),
            passed=self.passed,
            failed=self.failed,
            errors=self.errors,
        )


def _shown(path: str) -> str:
    """A scenario's file as the reader typed it: relative to the current folder when inside it."""
    if not path or not Path(path).is_absolute():
        return path
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def _table(scenarios: list[ScenarioResult]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("Scenario", overflow="fold")
    table.add_column("File", overflow="fold")
    table.add_column("Channel")
    table.add_column("Status")
    table.add_column("Violations", justify="right")
    table.add_column("Time", justify="right")
    for scenario in scenarios:
        played = scenario.status not in ("error", "skipped")
        violations = str(len(scenario.violations)) if played else "-"
        table.add_row(
            Text(scenario.name),
            Text(_shown(scenario.path)),
            Text(scenario.channel),
            Text(_LABELS[scenario.status], style=_STYLES[scenario.status]),
            violations,
            f"{scenario.duration_s:.2f}s",
        )
    return table


def _indented(text: str, indent: int, style: str = "") -> Text:
    pad = " " * indent
    return Text("\n".join(pad + line for line in text.splitlines()), style=style)


def _violations(scenario: ScenarioResult, console: Console) -> None:
    """Each cause's leading violation with the lines that show it, then what followed from it."""
    for cause in scenario_causes(scenario):
        line = Text("  ✗ ", style="red")
        line.append(cause.lead.headline())
        console.print(line, soft_wrap=True)
        for message in cause.lead.messages:
            console.print(_indented(message, 6, style="dim"), soft_wrap=True)
        if cause.follows:
            more = len(cause.follows)
            console.print(
                Text(f"    {more} more from the same cause:", style="dim"), soft_wrap=True
            )
            for follow in cause.follows:
                console.print(Text(f"      - {follow.headline()}"), soft_wrap=True)


def _details(scenario: ScenarioResult, console: Console) -> None:
    where = ", ".join(
        part for part in (_shown(scenario.path), scenario.channel, f"seed {scenario.seed}") if part
    )
    heading = Text()
    heading.append(_LABELS[scenario.status], style=_STYLES[scenario.status])
    heading.append(f" {scenario.name}", style="bold")
    heading.append(f"  ({where})", style="dim")
    console.print(heading, soft_wrap=True)
    for skip in scenario.skipped:
        line = Text("  - skipped ", style="yellow")
        line.append(skip.headline())
        console.print(line, soft_wrap=True)
    if scenario.status == "error":
        console.print(_indented(scenario.error or "could not be run", 2), soft_wrap=True)
    for failure in scenario.agent_errors:
        line = Text("  ! agent: ", style="magenta")
        line.append(failure)
        console.print(line, soft_wrap=True)
    for note in (_webhook_note(scenario), _model_note(scenario)):
        if note is not None:
            console.print(Text(f"  ! {note}", style="magenta"), soft_wrap=True)
    for stray in scenario.stray_sends:
        line = Text("  ! stray send: ", style="yellow")
        line.append(stray.headline())
        console.print(line, soft_wrap=True)
    _violations(scenario, console)
    if scenario.judgement is not None and scenario.judgement.outcome != "not judged":
        console.print(Text(f"  {scenario.judgement.headline()}"), soft_wrap=True)
        for criterion in scenario.judgement.criteria:
            console.print(Text(f"    - {criterion}", style="dim"), soft_wrap=True)
    if scenario.numbers and scenario.status != "passed":
        seen = ", ".join(f"{name} {number}" for name, number in scenario.numbers.items())
        console.print(Text(f"  The agent saw the users as: {seen}", style="dim"), soft_wrap=True)
    if scenario.reproduce:
        console.print(Text("  Reproduce with:", style="bold"))
        console.print(_indented(scenario.reproduce.rstrip("\n"), 4, style="cyan"), soft_wrap=True)
    console.print()


def _unlisted(scenarios: list[ScenarioResult]) -> str:
    """``12 passed`` (and ``2 skipped``): the rows a table without ``-v`` leaves out."""
    passed = sum(1 for s in scenarios if s.status == "passed")
    skipped = sum(1 for s in scenarios if s.status == "skipped")
    parts = [f"{passed} passed"] if passed else []
    parts += [f"{skipped} skipped"] if skipped else []
    return ", ".join(parts)


def print_summary(
    run: RunResult, console: Console | None = None, *, table: bool = True, verbose: bool = False
) -> None:
    """Print the failing scenarios as a table, what went wrong in each, and the totals.

    The table lists the scenarios that failed or could not run, with their
    file; those that passed (or were skipped) are one line, ``12 passed``,
    unless ``verbose`` (``harness run -v``) lists every scenario. ``table=False``
    leaves the table out (``harness run -q``).
    """
    console = console if console is not None else make_console()
    if table and run.scenarios:
        shown = ("failed", "error", "inconclusive")
        listed = [s for s in run.scenarios if verbose or s.status in shown]
        if listed:
            console.print(_table(listed))
        if not verbose and (rest := _unlisted(list(run.scenarios))):
            console.print(Text(rest + " (-v lists them)"), soft_wrap=True)
        console.print()
    for scenario in run.scenarios:
        noted = scenario.skipped or scenario.agent_errors or scenario.stray_sends
        if scenario.status != "passed" or noted:
            _details(scenario, console)
    for count in run_models(run):
        console.print(Text(f"model: {count.label}", style="dim"), soft_wrap=True)
    _judged(run, console)
    total = len(run.scenarios)
    noun = "scenario" if total == 1 else "scenarios"
    errors = "error" if run.errors == 1 else "errors"
    totals = Text(f"{total} {noun}: ")
    totals.append(f"{run.passed} passed", style="green")
    totals.append(", ")
    totals.append(f"{run.failed} failed", style="red" if run.failed else "")
    totals.append(", ")
    totals.append(f"{run.errors} {errors}", style="magenta" if run.errors else "")
    if run.skipped:
        totals.append(", ")
        totals.append(f"{run.skipped} skipped", style="yellow")
    if run.inconclusive:
        totals.append(", ")
        totals.append(f"{run.inconclusive} inconclusive", style="cyan")
    totals.append(f" in {run.duration_s:.2f}s")
    console.print(totals, soft_wrap=True)


def _judged(run: RunResult, console: Console) -> None:
    """The judge's absence, said once; then each repeated scenario's pass rate."""
    unjudged = [
        s.judgement.note
        for s in run.scenarios
        if s.judgement is not None and s.judgement.outcome == "not judged"
    ]
    if unjudged:
        noun = "scenario" if len(unjudged) == 1 else "scenarios"
        line = f"judge: {len(unjudged)} {noun} not judged: {unjudged[0]}"
        console.print(Text(line, style="dim"), soft_wrap=True)
    rates = run.pass_rates()
    if rates:
        console.print(Text("pass rate over repeated runs:", style="bold"))
        for rate in rates:
            style = "green" if rate.passed == rate.runs else "red"
            console.print(Text(f"  {rate.headline()}", style=style), soft_wrap=True)
