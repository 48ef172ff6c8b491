"""The README keeps what past work asked it to show, or the link to the page that now shows it.

The README is short: the rest lives on the documentation site under ``docs/``, and the README
links the pages. Each test here holds one element the README was asked for: a section, a
command, a flag, or a link to the page that holds it now (and that the page shows it).
``tests/docs/test_readme.py`` pins the demo and test commands; these tests stand beside it.

Every test also proves that it can fail: it runs its check again on a copy of the README (or of
the linked page) with the element taken out, and expects that copy to be refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from channels.whatsapp.retention_policy import SERVE_RETENTION
from harness.durations import format_duration

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SERVE = "`harness serve`"
OWN_BOT = "Test your own bot"

Check = Callable[[str], None]


def _section(text: str, marker: str) -> str:
    """The section whose ``##`` heading holds ``marker``, heading included."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.startswith("## ") and marker in line:
            end = next(
                (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
                len(lines),
            )
            return "\n".join(lines[start:end]) + "\n"
    raise AssertionError(f"no section headed with {marker!r}")


def _docs_links(text: str) -> set[str]:
    """The ``docs/...`` targets of the Markdown links and pictures in ``text``, anchors cut."""
    return set(re.findall(r"\]\((docs/[^)#\s]+)(?:#[^)]*)?\)", text))


def _linked_page(text: str, page: str) -> str:
    """The text of ``page``, which ``text`` must link and which must exist."""
    assert page in _docs_links(text), f"no link to {page}"
    path = ROOT / page
    assert path.is_file(), f"the link to {page} leads to no file"
    return path.read_text(encoding="utf-8")


def _shows(text: str, *elements: str) -> None:
    """``text`` holds every one of ``elements``, as written."""
    missing = [element for element in elements if element not in text]
    assert not missing, f"missing: {missing}"


def _commands(text: str) -> list[str]:
    """The lines of ``text``, with shell continuations (``\\`` at the end) joined."""
    return text.replace("\\\n", " ").splitlines()


def _refused(check: Check, text: str) -> None:
    """``check`` refuses ``text``."""
    with pytest.raises(AssertionError):
        check(text)


def _kept(check: Check, *elements: str) -> None:
    """The README passes ``check``, and fails it once any one of ``elements`` is taken out."""
    check(README)
    for element in elements:
        assert element in README, f"{element!r} is not in the README as written"
        _refused(check, README.replace(element, ""))


def test_the_readme_opens_with_one_paragraph_on_what_it_is() -> None:
    """Asked by issues 2 and 23: a short, honest description, one paragraph on what it is."""

    def check(text: str) -> None:
        title, _, rest = text.partition("\n")
        assert title.startswith("# "), "the README starts with no title"
        before_picture = rest.partition("\n![")[0]
        paragraphs = [p for p in before_picture.split("\n\n") if p.strip()]
        assert len(paragraphs) == 1, f"{len(paragraphs)} paragraphs before the picture"
        assert len(paragraphs[0].split()) >= 40, "the description is a line, not a paragraph"

    title_line = README.split("\n", 1)[0]
    paragraph = README.split("\n\n")[1]
    assert not paragraph.startswith("!"), "the picture comes before any description"
    _kept(check, paragraph)
    _refused(check, README.replace(paragraph, f"{paragraph}\n\nA second paragraph.", 1))
    _refused(check, README.replace(title_line, title_line[2:], 1))


def test_the_readme_shows_a_picture_of_a_report() -> None:
    """Asked by issue 23: one picture of a report, with the paragraph, before any section."""

    def check(text: str) -> None:
        head = text.split("\n## ", 1)[0]
        pictures = re.findall(r"^!\[[^\]]+\]\((docs/assets/[^)\s]+\.png)\)$", head, re.M)
        assert pictures, "no picture before the first section"
        assert (ROOT / pictures[0]).is_file(), f"the picture {pictures[0]} does not exist"
        assert (ROOT / pictures[0]).read_bytes().startswith(b"\x89PNG"), pictures[0]

    _kept(check, "docs/assets/report.png")


def test_the_readme_says_where_the_demo_report_opens_and_what_it_shows() -> None:
    """Asked by issue 5: how to open the demo's report, and what the user sees in it.

    The description of what the demo shows moved to the documentation's home page, which the
    README links beside the line that says where the report is.
    """

    def check(text: str) -> None:
        quick_start = _section(text, "Quick start")
        _shows(quick_start, "open `reports/report.html`")
        _shows(_linked_page(quick_start, "docs/index.md"), "## What the demo shows")

    _kept(check, "open `reports/report.html`", "docs/index.md")


def test_the_own_bot_section_has_a_factory_in_ten_lines_and_the_command_to_run_it() -> None:
    """Asked by issues 11 and 23: the README's own-agent section, a minimal factory for a plain
    bot, in a "test your own bot" example of about ten lines, and how to run it."""

    def check(text: str) -> None:
        section = _section(text, OWN_BOT)
        factories = re.findall(r"```python\n(.*?)```", section, re.S)
        assert factories, "the section shows no Python"
        assert "def factory(env)" in factories[0], "the Python block builds no factory"
        assert len(factories[0].splitlines()) <= 10, "the factory takes over ten lines"
        assert any(
            line.strip().startswith("$ harness run --target harness_target:factory")
            for line in section.splitlines()
        ), "the section does not run the factory"

    _kept(check, "def factory(env)", "harness run --target harness_target:factory")
    factory_line = "def factory(env):"
    _refused(check, README.replace(factory_line, "\n" * 5 + factory_line, 1))


def test_the_serve_section_starts_the_simulator_and_plays_a_user_with_curl() -> None:
    """Asked by issue 3: the README shows ``harness serve`` with curl."""

    def check(text: str) -> None:
        lines = _commands(_section(text, SERVE))
        assert any(
            line.startswith("harness serve ") and "--webhook-url " in line for line in lines
        ), "no harness serve command with its --webhook-url"
        assert any(line.startswith("curl ") and "/_harness/inbound" in line for line in lines), (
            "no curl call playing a user"
        )

    _kept(check, "harness serve --port", "/_harness/inbound")


def test_the_serve_section_shows_the_inject_that_does_not_wait() -> None:
    """Asked by issue 22: the README's ``harness serve`` section shows the non-waiting inject,
    ``"wait": false`` on a call that plays a user."""

    def check(text: str) -> None:
        lines = _commands(_section(text, SERVE))
        assert any(
            line.startswith("curl ") and "/_harness/inbound" in line and '"wait": false' in line
            for line in lines
        ), 'no curl call to /_harness/inbound with "wait": false'

    _kept(check, '"wait": false')


@pytest.mark.parametrize(
    ("flag", "default"),
    [
        pytest.param("--keep-events", str(SERVE_RETENTION.events), id="keep-events"),
        pytest.param("--keep-outbox", str(SERVE_RETENTION.outbox), id="keep-outbox"),
        pytest.param("--active-for", format_duration(SERVE_RETENTION.active), id="active-for"),
    ],
)
def test_the_serve_section_shows_the_retention_settings_at_their_defaults(
    flag: str, default: str
) -> None:
    """Asked by issue 22: the README's ``harness serve`` section shows the retention settings.

    The README says the values it shows are the defaults, so each is held to the value
    ``harness serve`` takes when it is not given.
    """

    def check(text: str) -> None:
        section = _section(text, SERVE)
        _shows(section, "the values\nabove are the defaults")
        serve = [line for line in _commands(section) if line.startswith("harness serve ")]
        assert serve, "no harness serve command"
        assert re.search(rf"(?<!\S){re.escape(flag)} {re.escape(default)}(?!\S)", serve[0]), (
            f"the command does not set {flag} {default}"
        )

    _kept(check, f"{flag} {default}")
    _refused(check, README.replace(f"{flag} {default}", f"{flag} 7{default}"))


@dataclass(frozen=True)
class Linked:
    """A page of the documentation that now holds what the README was asked to show."""

    asked: str
    page: str
    shows: tuple[str, ...]
    #: The README's section the link must stand in (None: anywhere in the README).
    readme_section: str | None = None
    #: The page's section that must hold ``shows`` (None: anywhere on the page).
    page_section: str | None = None

    def held(self, page_text: str) -> None:
        """The page (or its section) shows every element, as written."""
        where = _section(page_text, self.page_section) if self.page_section else page_text
        _shows(where, *self.shows)


LINKED = [
    pytest.param(
        Linked(
            "asked by issue 4: how to run the reference agent on its own, and against serve",
            "docs/how-to/serve.md",
            ("uvicorn agents.booking:app", "WHATSAPP_GRAPH_URL=http://127.0.0.1:8000"),
            readme_section=SERVE,
            page_section="The reference agent against `harness serve`",
        ),
        id="issue-4-the-reference-agent-on-its-own-and-against-serve",
    ),
    pytest.param(
        Linked(
            "asked by issue 6: record, replay, regress and diff",
            "docs/how-to/record-replay.md",
            ("$ harness record ", "$ harness replay ", "`harness regress DIR...`", "harness diff"),
        ),
        id="issue-6-record-replay-regress-diff",
    ),
    pytest.param(
        Linked(
            "asked by issue 6: the fixture format",
            "docs/reference/fixtures.md",
            ("`meta.json`", "`events.jsonl`", "`llm.jsonl`", "`conversation.json`"),
        ),
        id="issue-6-the-fixture-format",
    ),
    pytest.param(
        Linked(
            "asked by issue 7: a section recording a live chat, step by step on a test number",
            "docs/how-to/record-replay.md",
            ("harness proxy --listen", "callback URL", "Chat with the test number"),
            page_section="Record a live WhatsApp chat",
        ),
        id="issue-7-record-a-live-chat-on-a-test-number",
    ),
    pytest.param(
        Linked(
            "asked by issue 10: the layout of the repository",
            "docs/explanation/design.md",
            ("harness/", "suites/", "replay/", "report/", "cli/", "channels/", "agents/"),
            page_section="Layout and direction of dependencies",
        ),
        id="issue-10-the-layout",
    ),
    pytest.param(
        Linked(
            "asked by issue 11: the staging section, the agent started as the suite needs it",
            "docs/how-to/staging.md",
            ("uvicorn agents.booking:app", "harness run --target-url", "--concurrency 8"),
        ),
        id="issue-11-the-staging-section",
    ),
    pytest.param(
        Linked(
            "asked by issue 12: the harness serve section shows a media upload and a reaction",
            "docs/how-to/serve.md",
            ("/_harness/media", '"type": "reaction"'),
            readme_section=SERVE,
        ),
        id="issue-12-serve-with-a-media-upload-and-a-reaction",
    ),
    pytest.param(
        Linked(
            "asked by issue 15: a pytest section a fresh project can follow",
            "docs/tutorials/pytest.md",
            ("# conftest.py", "--harness-record-mode once"),
        ),
        id="issue-15-the-pytest-section",
    ),
    pytest.param(
        Linked(
            "asked by issue 15: a custom invariant, a complete example",
            "docs/how-to/custom-invariant.md",
            ("@invariant(", "Transcript(conversation)", "transcript.violation("),
        ),
        id="issue-15-a-custom-invariant",
    ),
    pytest.param(
        Linked(
            "asked by issue 16: any agent, any SDK: the two base URLs, the exporter, a live chat",
            "docs/how-to/any-agent.md",
            (
                "ANTHROPIC_BASE_URL",
                "OPENAI_BASE_URL",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "harness proxy",
            ),
        ),
        id="issue-16-any-agent-any-sdk",
    ),
    pytest.param(
        Linked(
            "asked by issue 17: the simulated users, with the bundled hesitant customer",
            "docs/how-to/simulated-users.md",
            ("simulated_hesitant_customer.yaml", "--repeat"),
        ),
        id="issue-17-simulated-users",
    ),
    pytest.param(
        Linked(
            "asked by issue 18: scale-out",
            "docs/how-to/scale-out.md",
            ("--concurrency", "--redis"),
        ),
        id="issue-18-scale-out",
    ),
    pytest.param(
        Linked(
            "asked by issue 18: load",
            "docs/how-to/load.md",
            ("harness load --target-url",),
        ),
        id="issue-18-load",
    ),
    pytest.param(
        Linked(
            "asked by issue 19: the prompt debugger's loop, with a short walkthrough",
            "docs/how-to/prompt-debugger.md",
            ("harness ui ", "**Replay all selected**", "**Save**"),
        ),
        id="issue-19-the-prompt-debugger",
    ),
    pytest.param(
        Linked(
            "asked by issue 20: harness explore",
            "docs/how-to/explore.md",
            ("harness explore ", "--budget"),
        ),
        id="issue-20-explore",
    ),
    pytest.param(
        Linked(
            "asked by issue 24: recording with a real model, as the user sees it",
            "docs/how-to/record-replay.md",
            (" --live\n", "recorded 'happy booking", "# offline: no key, no network", "SAME "),
        ),
        id="issue-24-recording-with-a-real-model",
    ),
    pytest.param(
        Linked(
            "asked by issue 25: the live chat walkthrough ends in a SAME replay",
            "docs/how-to/record-replay.md",
            ("$ harness replay fixtures/chat-1\n   SAME      fixtures/chat-1",),
            page_section="Record a live WhatsApp chat",
        ),
        id="issue-25-the-live-chat-replays-same",
    ),
]


@pytest.mark.parametrize("linked", LINKED)
def test_the_readme_links_the_page_that_shows_it(linked: Linked) -> None:
    """The README links the page that now shows what it was asked to show (the issue and its
    ask are in the test's id and in ``linked.asked``), and the page shows it."""

    def check(text: str) -> None:
        where = _section(text, linked.readme_section) if linked.readme_section else text
        try:
            linked.held(_linked_page(where, linked.page))
        except AssertionError as problem:
            raise AssertionError(f"{linked.asked}: {problem}") from None

    _kept(check, linked.page)
    page = (ROOT / linked.page).read_text(encoding="utf-8")
    for element in linked.shows:
        with pytest.raises(AssertionError):
            linked.held(page.replace(element, ""))


def _layout_entries(block: str) -> list[str]:
    """The paths a layout block names: top-level entries, and two-space-indented ones under them.

    Each line's leading tokens that look like paths (``name/``, ``file.ext``) are entries; a
    line indented further continues a description.
    """
    entries: list[str] = []
    parent = ""
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if indent not in (0, 2):
            continue
        tokens = line.split()
        named = []
        for token in tokens:
            if token == "..." or not re.fullmatch(r"[\w.\-/]+", token):
                break
            if not (token.endswith("/") or "." in token):
                break
            named.append(token)
        if indent == 0:
            entries += named
            if len(named) == 1 and named[0].endswith("/"):
                parent = named[0]
        else:
            entries += [parent + name for name in named]
    return entries


def test_the_layout_the_readme_links_matches_the_tree() -> None:
    """Asked by issue 10: the README's Layout section matches the tree. The layout is now on the
    design page, which the README links: every folder and module it names exists."""

    def check(text: str) -> None:
        page = _linked_page(text, "docs/explanation/design.md")
        layout = _section(page, "Layout and direction of dependencies")
        blocks = re.findall(r"```\n(.*?)```", layout, re.S)
        assert blocks, "the layout section draws no tree"
        entries = _layout_entries(blocks[0])
        assert len(entries) >= 20, entries
        absent = [entry for entry in entries if not (ROOT / entry).exists()]
        assert not absent, f"the layout names what the tree lacks: {absent}"

    _kept(check, "docs/explanation/design.md")
    design = (ROOT / "docs/explanation/design.md").read_text(encoding="utf-8")
    layout = _section(design, "Layout and direction of dependencies")
    entries = _layout_entries(re.findall(r"```\n(.*?)```", layout, re.S)[0])
    assert "harness/suites/" in entries
    assert "channels/direct.py" in entries
    assert "harness/nowhere/" in _layout_entries("harness/  the core\n  nowhere/  gone\n")


def test_scale_out_leads_on_to_the_staging_topology() -> None:
    """Asked by issue 18: the README explains the staging topology of ``compose.yaml``. The
    README links the scale-out page, which links the page that explains it."""

    def check(text: str) -> None:
        scale_out = _linked_page(text, "docs/how-to/scale-out.md")
        assert "](distributed.md)" in scale_out, "the scale-out page links no distributed page"
        distributed = (ROOT / "docs/how-to/distributed.md").read_text(encoding="utf-8")
        _shows(_section(distributed, "The staging topology (`compose.yaml`)"), "compose.yaml")

    _kept(check, "docs/how-to/scale-out.md")


# The pages the short README was to link: tutorials, how-to guides, reference, explanation.
SHORT_README_LINKS = [
    "docs/tutorials/own-bot.md",
    "docs/tutorials/pytest.md",
    "docs/how-to/staging.md",
    "docs/how-to/record-replay.md",
    "docs/how-to/ci.md",
    "docs/how-to/custom-invariant.md",
    "docs/how-to/scale-out.md",
    "docs/reference/cli.md",
    "docs/reference/scenarios.md",
    "docs/reference/invariants.md",
    "docs/reference/exit-codes.md",
    "docs/reference/environment.md",
    "docs/reference/fixtures.md",
    "docs/reference/api.md",
    "docs/explanation/design.md",
    "docs/explanation/fidelity.md",
]


@pytest.mark.parametrize("page", SHORT_README_LINKS)
def test_the_short_readme_links_the_docs_page(page: str) -> None:
    """Asked by issue 23: a short README with links into the docs, organised by what the reader
    wants; each page the docs were to have is linked, and exists."""

    def check(text: str) -> None:
        _linked_page(_section(text, "Documentation"), page)

    _kept(check, page)


MUTATION_SCORE = re.compile(r"Last\s+full\s+run:\s+\d+\s+of\s+\d+\s+caught")


def _mutation_score_shown(readme: str, reliability: str) -> None:
    """The mutation check's last score is in the README, ``RELIABILITY.md``, or a linked page."""
    if MUTATION_SCORE.search(readme) or MUTATION_SCORE.search(reliability):
        return
    pages = sorted(page for page in _docs_links(readme) if page.endswith(".md"))
    linked = [ROOT / page for page in pages if (ROOT / page).is_file()]
    assert any(MUTATION_SCORE.search(path.read_text(encoding="utf-8")) for path in linked), (
        "the mutation check's last score is in neither the README, RELIABILITY.md,"
        " nor a page the README links (docs/explanation/quality.md holds it)"
    )


def test_the_mutation_checks_last_score_is_in_reach_of_the_readme() -> None:
    """Asked by issue 21: the mutation check's last score is in the README's reliability
    section or in ``RELIABILITY.md``; the README now points into the docs for the rest."""
    reliability = (ROOT / "RELIABILITY.md").read_text(encoding="utf-8")

    def check(text: str) -> None:
        _mutation_score_shown(text, reliability)

    check(README)
    _refused(check, README.replace("docs/explanation/quality.md", ""))
