"""``report.html``: one self-contained page that draws every conversation as a chat.

The page opens on what failed: the scenarios that failed or could not run
come first, and those that passed (or were skipped) follow folded in one
``<details>``, closed until opened. Each scenario is a ``<section
class="scenario" data-status="...">`` holding its facts, the headline of
each cause of its failure (:mod:`harness.report.causes`), its conversation
as WhatsApp-like bubbles (virtual timestamps, delivery ticks, tool calls
inline, channel faults marked on the bubbles they touched) and its
violations, highlighted at the turn where they happened, the ones that
follow from a cause drawn inside it. Filter links (All / Passed / Failed /
Errors) set the page's hash; a few lines of inline script hide the sections
that don't match (and open the folded ones when they are asked for), so
``report.html#failed`` shows only the failures.

The template, its CSS and its script ship as package data and are inlined
at render time: the page needs no other file and no network. Jinja2 runs
with autoescaping on, since every message in a chat is untrusted text.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from harness.files import write_atomic
from harness.report._chat import scenario_view
from harness.report._items import ScenarioView
from harness.report.answers import run_models
from harness.results import RunResult, ScenarioStatus

__all__ = ["render_html", "write_html"]

_TEMPLATES = "templates"
_PAGE = "report.html.j2"
_STATUS_WORDS = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "skipped": "SKIP",
    "inconclusive": "INCONCLUSIVE",
}


def _read(name: str) -> str:
    return resources.files("harness.report").joinpath(_TEMPLATES, name).read_text(encoding="utf-8")


def _load(name: str) -> str | None:
    try:
        return _read(name)
    except FileNotFoundError:
        return None


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["status_word"] = _STATUS_WORDS
    return env


def _views(run: RunResult) -> list[ScenarioView]:
    views: list[ScenarioView] = []
    for position, scenario in enumerate(run.scenarios, start=1):
        views.append(scenario_view(scenario, position, (v.anchor for v in views)))
    return views


def _passing_summary(views: list[ScenarioView]) -> str:
    """``12 passed, 2 skipped``: the heading of the folded group of scenarios that did not fail."""
    counts = Counter(view.result.status for view in views)
    shown: tuple[ScenarioStatus, ...] = ("passed", "skipped", "inconclusive")
    return ", ".join(f"{counts[s]} {s}" for s in shown if counts[s])


def render_html(run: RunResult) -> str:
    """The report page for a run, as one HTML document with its CSS and script inlined.

    Scenarios that failed or could not run come first, in run order; the
    others follow, folded under one line (``12 passed``) until opened.
    """
    views = _views(run)
    failing = [view for view in views if view.failing]
    others = [view for view in views if not view.failing]
    template = _environment().get_template(_PAGE)
    return template.render(
        run=run,
        scenarios=[*failing, *others],
        failing=failing,
        others=others,
        others_summary=_passing_summary(others),
        models=run_models(run),
        pass_rates=run.pass_rates(),
        # our own files, not user data: inlined as they are
        css=Markup(_read("report.css")),
        script=Markup(_read("report.js")),
    )


def write_html(run: RunResult, path: Path | str) -> Path:
    """Write ``report.html`` atomically and return its path."""
    return write_atomic(path, render_html(run))
