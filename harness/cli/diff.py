"""``harness diff A B``: two conversations side by side in the terminal, and as a page.

A and B are each a fixture directory, a ``conversation.json`` or a
``report.json`` (``--scenario`` names the scenario to take from a report).
The comparison lives in :mod:`harness.cli.diffing`, imported when the
command runs. Exit codes follow ``diff(1)``: 0 the conversations match,
1 they differ, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["diff_command"]


@click.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--scenario",
    default=None,
    metavar="NAME",
    help="The scenario to compare, for an input that is a report.json.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="OUT.html",
    help="Also write the side-by-side page here.",
)
@click.option("--times", is_flag=True, help="Compare virtual times too (ignored by default).")
@click.option("--changed-only", is_flag=True, help="Leave out the turns that match.")
@click.pass_context
def diff_command(
    ctx: click.Context,
    a: Path,
    b: Path,
    scenario: str | None,
    html_path: Path | None,
    times: bool,
    changed_only: bool,
) -> None:
    """Show how two conversations differ, turn by turn; exit 1 if they do, 2 on bad input.

    A and B are fixture directories, conversation.json files or report.json
    files (with --scenario).
    """
    from harness.cli.diffing import compare

    code = compare(
        a, b, scenario=scenario, html_path=html_path, times=times, changed_only=changed_only
    )
    ctx.exit(code)
