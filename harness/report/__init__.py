"""Reports of a suite run: the console, ``report.json``, ``junit.xml`` and ``report.html``.

The runner feeds :class:`SuiteProgress` as scenarios finish and hands the
finished :class:`~harness.results.RunResult` to the writers; each writer
produces one file, atomically.

Names load on first use (see :mod:`harness.lazy`): printing the console
summary does not import the HTML templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

if TYPE_CHECKING:
    from harness.report.answers import *
    from harness.report.causes import *
    from harness.report.console import *
    from harness.report.diff_html import *
    from harness.report.html import *
    from harness.report.json_report import *
    from harness.report.junit import *

#: The module that owns each public name.
_OWNERS: dict[str, str] = {
    "Cause": "harness.report.causes",
    "DiffRow": "harness.report.diff_html",
    "SuiteProgress": "harness.report.console",
    "causes": "harness.report.causes",
    "diff_rows": "harness.report.diff_html",
    "junit_xml": "harness.report.junit",
    "load_json": "harness.report.json_report",
    "make_console": "harness.report.console",
    "print_summary": "harness.report.console",
    "render_diff_html": "harness.report.diff_html",
    "render_html": "harness.report.html",
    "report_data": "harness.report.json_report",
    "result_line": "harness.report.console",
    "run_models": "harness.report.answers",
    "scenario_causes": "harness.report.causes",
    "write_diff_html": "harness.report.diff_html",
    "write_html": "harness.report.html",
    "write_json": "harness.report.json_report",
    "write_junit": "harness.report.junit",
    "xml_safe": "harness.report.junit",
}

__all__ = sorted(_OWNERS)

_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
