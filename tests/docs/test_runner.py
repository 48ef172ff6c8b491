"""The reader of the docs' code blocks, and the reader's terminal, on pages made up here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mkdocs_hooks import on_page_markdown
from tests.docs.pages import PageError, commands_of, read_page
from tests.docs.session import BlockFailed, Session

PAGE = """\
# A page

<!-- docs-test: after tutorials/own-bot.md -->
```console
$ mkdir -p folder && cd folder
$ export GREETING=hello \\
    NAME=you
output that is not run
```

```python
# scripts/greet.py
print("hi")
```

<!-- a comment of the page's own -->
<!-- docs-test: skip (needs a server) -->
```sh
harness serve
```

<!-- docs-test: exit 3 -->
<!-- docs-test: prints "three" -->
```bash
echo three; exit 3
```

   ```text
   indented output
   ```
"""


def test_a_page_is_read_into_blocks_with_their_markers() -> None:
    page = read_page(PAGE, "page.md")
    assert page.after == "tutorials/own-bot.md"
    console, script, server, failing, text = page.blocks
    assert (console.language, console.line, console.is_shell) == ("console", 4, True)
    assert commands_of(console) == (
        "mkdir -p folder && cd folder\nexport GREETING=hello \\\n    NAME=you\n"
    )
    assert (script.file, script.is_shell) == ("scripts/greet.py", False)
    assert server.skip == "needs a server"
    assert (failing.exit_code, failing.prints, failing.skip) == (3, ("three",), None)
    assert commands_of(failing) == failing.text == "echo three; exit 3\n"
    assert (text.language, text.text) == ("text", "indented output\n")


@pytest.mark.parametrize(
    "marker", ["skip", "skip ()", "exit", "exit one", "after", "prints three", "run"]
)
def test_a_marker_it_cannot_read_names_the_page_and_line(marker: str) -> None:
    page = f"text\n<!-- docs-test: {marker} -->\n```sh\ntrue\n```\n"
    with pytest.raises(PageError, match=r"^page\.md:2: docs-test marker"):
        read_page(page, "page.md")


def test_a_block_never_closed_is_an_error() -> None:
    with pytest.raises(PageError, match=r"^page\.md:2: a code block that is never closed"):
        read_page("text\n```sh\ntrue\n", "page.md")


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    # A small project stands in for the real one, so the test copies little.
    project = tmp_path / "source"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    (project / ".venv").mkdir()
    monkeypatch.setattr("tests.docs.session.ROOT", project)
    return Session.open(tmp_path / "session")


def test_a_session_carries_the_directory_and_the_variables_from_block_to_block(
    session: Session,
) -> None:
    console, script, _server, failing, _text = read_page(PAGE, "page.md").blocks
    assert (session.start / "pyproject.toml").is_file()
    assert not (session.start / ".venv").exists()
    session.run(console)
    assert session.cwd == session.start / "folder"
    session.run(script)
    assert (session.start / "folder" / "scripts" / "greet.py").read_text() == 'print("hi")\n'
    check = read_page(
        '```bash\necho "$GREETING $NAME from $(basename "$PWD") in $HOME"\n```\n', "p"
    )
    printed = session.run(check.blocks[0])
    assert printed == f"hello you from folder in {session.home}\n"
    assert "three" in session.run(failing)


def test_a_block_that_exits_otherwise_than_the_page_says_fails_with_its_output(
    session: Session,
) -> None:
    page = read_page("```console\n$ echo about to fail\n$ false\n$ echo never\n```\n", "p.md")
    with pytest.raises(BlockFailed, match=r"p\.md:1: exited 1, the page says 0") as failed:
        session.run(page.blocks[0])
    assert "about to fail" in str(failed.value)
    assert "never" not in str(failed.value).split("what it printed")[1]


def test_a_block_that_lacks_what_the_page_says_it_prints_fails(session: Session) -> None:
    page = read_page('<!-- docs-test: prints "four" -->\n```bash\necho three\n```\n', "p.md")
    with pytest.raises(BlockFailed, match=r"the output lacks \['four'\]"):
        session.run(page.blocks[0])


def test_the_session_has_no_key_and_no_index(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("HARNESS_STORE_URL", "redis://somewhere")
    page = read_page(
        '```bash\necho "[$ANTHROPIC_API_KEY][$HARNESS_STORE_URL][$PIP_NO_INDEX]"\n```\n', "p"
    )
    assert session.run(page.blocks[0]) == "[][][1]\n"


def test_the_schema_marker_becomes_the_schema_indented_as_the_marker() -> None:
    page = "# Scenarios\n\n??? note\n\n    <!-- generated: scenario-schema -->\n\nafter\n"
    built = on_page_markdown(page)
    inside = built.split("    ```json\n", 1)[1].split("    ```\n", 1)[0]
    schema = json.loads("\n".join(line[4:] for line in inside.splitlines()))
    assert "steps" in schema["properties"]
    assert built.endswith("\nafter\n")
    assert on_page_markdown("no marker\n") == "no marker\n"
