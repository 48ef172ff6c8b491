"""``harness schema``: the JSON Schema of scenario files, for editors and linters.

Point an editor's YAML support at the written file (for the YAML language
server, a first line ``# yaml-language-server: $schema=scenario.schema.json``)
and scenario files are checked and completed as they are typed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

__all__ = ["schema_command", "schema_text"]


def schema_text() -> str:
    """The scenario JSON Schema as stable, indented JSON ending in a newline."""
    from harness.suites.scenario import scenario_json_schema

    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


@click.command("schema")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    default=None,
    help="Write the schema to this file instead of printing it.",
)
def schema_command(out: Path | None) -> None:
    """Print the JSON Schema of scenario files (or write it with --out)."""
    text = schema_text()
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.FileError(str(out), hint=exc.strerror or str(exc)) from None
    click.echo(f"wrote {out}", err=True)
