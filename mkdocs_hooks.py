"""Build-time hooks of the documentation site (``mkdocs.yml`` names this file).

A page asks for text generated from the code with a marker line of its own, so
the page can't fall behind the code:

- ``<!-- generated: scenario-schema -->``: the JSON Schema of scenario files,
  exactly as ``harness schema`` prints it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["on_page_markdown"]

SCHEMA_MARKER = re.compile(r"^(?P<indent>[ \t]*)<!-- generated: scenario-schema -->$", re.M)


def _schema_block(indent: str) -> str:
    """The schema as a JSON code block, each line indented as the marker is."""
    from harness.cli.schema import schema_text

    lines = ["```json", *schema_text().splitlines(), "```"]
    return "\n".join(indent + line if line else line for line in lines)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The page with each generated-text marker replaced by its text."""
    return SCHEMA_MARKER.sub(lambda found: _schema_block(found.group("indent")), markdown)
