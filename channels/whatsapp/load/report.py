"""The reports of a load run: ``load.json`` for machines, ``load.html`` for people.

The JSON holds the settings, the figures (:meth:`LoadStats.summary`) and the
timeline second by second. The HTML page shows the same figures and draws the
timeline as a histogram of latency over time (time across, latency bins up,
darker where more replies fell) above the messages sent per interval, as
inline SVG: one file, no script, nothing fetched.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Final

import jinja2

from channels.whatsapp.load.runner import LoadResult
from channels.whatsapp.load.stats import LATENCY_BINS, Second
from harness.files import write_atomic

__all__ = [
    "REPORT_KIND",
    "load_report_data",
    "render_load_html",
    "write_load_html",
    "write_load_json",
]

#: The ``kind`` of a load report, and its version.
REPORT_KIND: Final = "harness-load-report"
_VERSION: Final = 1
# The most columns the histogram over time is drawn with; longer runs group seconds.
_COLUMNS: Final = 120
# The chart is about this wide, whatever the run's length; each column at least _CELL_W.
_CHART_W: Final = 720
_CELL_W: Final = 4
_CELL_H: Final = 18


def _bin_label(index: int) -> str:
    if index == len(LATENCY_BINS):
        return f"> {_short(LATENCY_BINS[-1])}"
    return f"≤ {_short(LATENCY_BINS[index])}"


def _short(seconds: float) -> str:
    return f"{seconds * 1000:g} ms" if seconds < 1 else f"{seconds:g} s"


def load_report_data(result: LoadResult) -> dict[str, Any]:
    """The JSON report of ``result`` as plain data."""
    plan = result.plan
    seconds = max(result.stats.timeline, default=-1) + 1
    timeline = []
    for index in range(seconds):
        second = result.stats.timeline.get(index) or Second()
        timeline.append(
            {
                "second": index,
                "sent": second.sent,
                "replied": second.replied,
                "lost": second.lost,
                "refused": second.refused,
                "errors": second.errors,
                "latency_bins": list(second.bins),
            }
        )
    return {
        "kind": REPORT_KIND,
        "version": _VERSION,
        "target_url": plan.target_url,
        "graph_url": result.graph_url,
        "passed": not result.failed,
        "stopped_early": result.stopped_early,
        "settings": {
            "users": plan.users,
            "rate_per_s": plan.rate,
            "duration_s": plan.duration,
            "max_messages": plan.max_messages,
            "reply_timeout_s": plan.reply_timeout,
            "think_s": plan.think,
            "connections": plan.connections,
            "templates": [template.name for template in plan.templates],
            "statuses": plan.statuses,
            "rate_limits": result.config.rate_limits,
            "throughput_mps": result.config.throughput_mps,
            "window_s": result.config.window_seconds,
            "window_error": result.config.window_error,
        },
        "results": result.summary(),
        "latency_bins_s": [*LATENCY_BINS, None],
        "timeline": timeline,
    }


def write_load_json(result: LoadResult, path: Path | str) -> Path:
    """Write the JSON report atomically and return its path."""
    text = json.dumps(load_report_data(result), indent=2, ensure_ascii=False) + "\n"
    return write_atomic(path, text)


def _columns(timeline: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Seconds grouped into at most :data:`_COLUMNS` columns; the group's width in seconds."""
    width = max(1, -(-len(timeline) // _COLUMNS))
    bins = range(len(LATENCY_BINS) + 1)
    columns = []
    for first in range(0, len(timeline), width):
        group = timeline[first : first + width]
        columns.append(
            {
                "start": first,
                "sent": sum(s["sent"] for s in group),
                "lost": sum(s["lost"] for s in group),
                "refused": sum(s["refused"] for s in group),
                "errors": sum(s["errors"] for s in group),
                "bins": [sum(s["latency_bins"][i] for s in group) for i in bins],
            }
        )
    return width, columns


def _chart(timeline: list[dict[str, Any]]) -> dict[str, Any]:
    """Rectangles of the histogram over time and of the bars of messages sent."""
    width, columns = _columns(timeline)
    cell_w = max(_CELL_W, _CHART_W // max(len(columns), 1))
    rows = len(LATENCY_BINS) + 1
    most = max((count for column in columns for count in column["bins"]), default=0) or 1
    most_sent = max((column["sent"] for column in columns), default=0) or 1
    cells, bars = [], []
    for x, column in enumerate(columns):
        for row, count in enumerate(column["bins"]):
            if count:
                cells.append(
                    {
                        "x": x * cell_w,
                        "y": (rows - 1 - row) * _CELL_H,
                        "opacity": round(0.15 + 0.85 * count / most, 3),
                        "title": f"{column['start']}s: {count} replies {_bin_label(row)}",
                    }
                )
        height = round(60 * column["sent"] / most_sent, 1)
        bars.append(
            {
                "x": x * cell_w,
                "y": round(60 - height, 1),
                "height": height,
                "title": f"{column['start']}s: {column['sent']} sent, {column['lost']} lost, "
                f"{column['refused']} refused, {column['errors']} errors",
                "bad": bool(column["lost"] or column["refused"] or column["errors"]),
            }
        )
    return {
        "width": max(len(columns), 1) * cell_w,
        "height": rows * _CELL_H,
        "cell_w": cell_w,
        "seconds": len(timeline),
        "cell_h": _CELL_H,
        "seconds_per_column": width,
        "labels": [
            {"y": (rows - 1 - row) * _CELL_H + _CELL_H - 5, "text": _bin_label(row)}
            for row in range(rows)
        ],
        "cells": cells,
        "bars": bars,
    }


@cache
def _template() -> jinja2.Template:
    source = (
        resources.files("channels.whatsapp.load")
        .joinpath("templates", "load.html.j2")
        .read_text(encoding="utf-8")
    )
    env = jinja2.Environment(
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env.from_string(source)


def render_load_html(result: LoadResult) -> str:
    """The HTML report of ``result``: one page, its chart as inline SVG."""
    data = load_report_data(result)
    return _template().render(data=data, results=data["results"], chart=_chart(data["timeline"]))


def write_load_html(result: LoadResult, path: Path | str) -> Path:
    """Write the HTML report atomically and return its path."""
    return write_atomic(path, render_load_html(result))
