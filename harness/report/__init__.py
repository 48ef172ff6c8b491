"""Reports of a suite run: the console, ``report.json``, ``junit.xml`` and ``report.html``.

The runner feeds :class:`SuiteProgress` as scenarios finish and hands the
finished :class:`~harness.results.RunResult` to the writers; each writer
produces one file, atomically.
"""

from __future__ import annotations

from harness.report.answers import run_models
from harness.report.causes import Cause, causes, scenario_causes
from harness.report.console import SuiteProgress, make_console, print_summary, result_line
from harness.report.diff_html import DiffRow, diff_rows, render_diff_html, write_diff_html
from harness.report.html import render_html, write_html
from harness.report.json_report import load_json, report_data, write_json
from harness.report.junit import junit_xml, write_junit, xml_safe

__all__ = [
    "Cause",
    "DiffRow",
    "SuiteProgress",
    "causes",
    "diff_rows",
    "junit_xml",
    "load_json",
    "make_console",
    "print_summary",
    "render_diff_html",
    "render_html",
    "report_data",
    "result_line",
    "run_models",
    "scenario_causes",
    "write_diff_html",
    "write_html",
    "write_json",
    "write_junit",
    "xml_safe",
]
