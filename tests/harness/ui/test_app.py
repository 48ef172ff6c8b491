"""The prompt debugger's app, driven in-process: list, open, replay, compare, save.

Replays run the bundled booking agent on the live policy, so a request the
recording can't answer (the prompt changed) goes to its offline model.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.suites.runner import Runner, RunOptions
from harness.suites.target import DEFAULT_TARGET
from harness.ui import catalog, create_app
from harness.ui.saving import digest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "scenarios" / "booking" / "fixtures"
PACKAGED = ROOT / "agents" / "booking" / "prompts" / "system.md"
# 0: the greeting names the business; 1: no greeting; 2: the need for a step-free table
NAMES = ("confirm_by_typing_yes", "happy_confirm_button", "wheelchair_constraint_across_turns")
RENAMED = PACKAGED.read_text("utf-8").replace(
    "booking assistant of $business", "booking assistant of Chez Zed"
)
# Without its customer section, the model no longer knows the customer needs no stairs.
FORGETFUL = PACKAGED.read_text("utf-8").replace("\n$profile\n", "\n")
HOST = "http://127.0.0.1"


@pytest.fixture
def prompt_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir()
    shutil.copy(PACKAGED, folder / "system.md")
    return folder


@pytest.fixture
async def client(prompt_dir: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = {"BOOKING_PROMPT_DIR": str(prompt_dir)}
    runner = Runner(RunOptions(target=DEFAULT_TARGET, agent_settings=settings))
    app = create_app(catalog([FIXTURES / n for n in NAMES]), runner, settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=HOST) as c:
        yield c
    app.state.ui.replayer.close()


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def _replay(
    client: httpx.AsyncClient, ids: list[int], prompts: dict[str, str]
) -> list[dict[str, Any]]:
    """Start a replay and read its events until it is done; the finished fixtures' summaries."""
    started = await client.post("/api/replays", json={"fixtures": ids, "prompts": prompts})
    assert started.status_code == 202, started.text
    job, after, events = started.json()["job"], 0, []
    while True:
        snap = (await client.get(f"/api/replays/{job}", params={"after": after, "wait": 20})).json()
        events.extend(snap["events"])
        after = snap["next"]
        if snap["done"]:
            break
    assert [e["kind"] for e in events if e["kind"] not in ("started", "finished")] == ["done"]
    return [e | {"job": job} for e in events if e["kind"] == "finished"]


async def test_the_list_shows_each_fixture_with_its_scenario_date_turns_and_invariants(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/")
    assert page.status_code == 200
    html = page.text
    assert "booking confirmed by typing yes" in html
    assert 'data-search="confirm_by_typing_yes booking confirmed by typing yes 2026-11-30' in html
    assert '<time datetime="2026-11-30' in html
    assert html.count('class="inv inv-kept"') == len(NAMES)
    assert 'id="search"' in html


async def test_a_fixture_opens_with_its_chat_and_the_agents_prompt_in_the_editor(
    client: httpx.AsyncClient, prompt_dir: Path
) -> None:
    page = (await client.get("/fixtures/0")).text
    assert f"<code>{prompt_dir / 'system.md'}</code>" in page
    assert 'data-name="system"' in page
    assert f'data-digest="{digest(PACKAGED.read_text("utf-8"))}"' in page
    assert "You are the WhatsApp booking assistant of $business" in page
    assert 'src="/fixtures/0/chat"' in page
    chat = (await client.get("/fixtures/0/chat")).text
    assert 'class="msg msg-out' in chat
    assert "I can book you a table at Casa Lucia" in chat
    assert (await client.get("/fixtures/9")).status_code == 404


async def test_a_replay_with_an_edited_prompt_shows_the_turn_it_changed(
    client: httpx.AsyncClient, prompt_dir: Path
) -> None:
    [done] = await _replay(client, [0], {"system": RENAMED})
    assert done["status"] == "changed"
    assert done["changed_turns"] == [1]
    assert done["invariants_now"] == "kept"
    assert not done["newly_failing"]
    diff = await client.get(f"/replays/{done['job']}/0/diff")
    assert diff.status_code == 200
    assert diff.text.count('class="row changed"') == 2  # turn 1, in both panes
    assert "Chez Zed" in diff.text
    assert "Casa Lucia" in diff.text
    # a replay writes nothing
    assert (prompt_dir / "system.md").read_text("utf-8") == PACKAGED.read_text("utf-8")
    assert _names(prompt_dir) == ["system.md"]


async def test_a_replay_with_the_prompt_as_it_is_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    [done] = await _replay(client, [0], {"system": PACKAGED.read_text("utf-8")})
    assert (done["status"], done["changed_turns"]) == ("same", [])


async def test_replay_all_tells_which_changed_and_which_now_fail_an_invariant(
    client: httpx.AsyncClient,
) -> None:
    results = {r["name"]: r for r in await _replay(client, [0, 1, 2], {"system": FORGETFUL})}
    assert list(results) == list(NAMES)  # in order, one each
    assert results["happy_confirm_button"]["changed"] is False
    wheelchair = results["wheelchair_constraint_across_turns"]
    assert wheelchair["changed"] is True
    assert wheelchair["status"] == "failed"
    assert (wheelchair["invariants_before"], wheelchair["invariants_now"]) == ("kept", "broken")
    assert wheelchair["newly_failing"] is True
    assert any(v.startswith("constraint_honored") for v in wheelchair["violations"])


async def test_save_writes_the_declared_file_and_keeps_the_previous_version(
    client: httpx.AsyncClient, prompt_dir: Path
) -> None:
    original = PACKAGED.read_text("utf-8")
    answer = await client.post(
        "/api/prompts/system", json={"text": RENAMED, "based_on": digest(original)}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "name": "system",
        "path": str(prompt_dir / "system.md"),
        "backup": str(prompt_dir / "system.md.bak"),
        "digest": digest(RENAMED),
    }
    assert (prompt_dir / "system.md").read_text("utf-8") == RENAMED
    assert (prompt_dir / "system.md.bak").read_text("utf-8") == original
    # the editor, reloaded, shows the saved text
    listed = (await client.get("/api/prompts")).json()
    assert [(p["name"], p["text"], p["digest"]) for p in listed] == [
        ("system", RENAMED, digest(RENAMED))
    ]


async def test_save_refuses_to_overwrite_an_edit_made_on_disk_meanwhile(
    client: httpx.AsyncClient, prompt_dir: Path
) -> None:
    opened = digest(PACKAGED.read_text("utf-8"))
    (prompt_dir / "system.md").write_text("edited in another editor\n", encoding="utf-8")
    answer = await client.post("/api/prompts/system", json={"text": RENAMED, "based_on": opened})
    assert answer.status_code == 409
    assert "changed on disk since it was opened" in answer.json()["error"]
    assert (prompt_dir / "system.md").read_text("utf-8") == "edited in another editor\n"


@pytest.mark.parametrize("name", ["nope", "..%2F..%2Fevil", "system.md"])
async def test_only_a_prompt_the_agent_declares_can_be_saved(
    client: httpx.AsyncClient, prompt_dir: Path, name: str
) -> None:
    answer = await client.post(
        f"/api/prompts/{name}", json={"text": "x", "path": str(prompt_dir / "evil.md")}
    )
    assert answer.status_code == 404
    if "%2F" not in name:  # a name with a slash does not even reach the route
        assert f"the agent declares no prompt {name!r}" in answer.json()["error"]
    assert _names(prompt_dir) == ["system.md"]
    assert not (prompt_dir.parent / "evil").exists()


async def test_changes_are_taken_only_as_json_from_the_apps_own_pages(
    client: httpx.AsyncClient, prompt_dir: Path
) -> None:
    form = await client.post("/api/prompts/system", data={"text": "from a form"})
    assert form.status_code == 415
    foreign = await client.post(
        "/api/prompts/system", json={"text": "x"}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    rebound = await client.get("/", headers={"Host": "evil.example"})
    assert rebound.status_code == 400
    assert (prompt_dir / "system.md").read_text("utf-8") == PACKAGED.read_text("utf-8")


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"fixtures": []}, 400, "fixtures: expected a non-empty list"),
        ({"fixtures": [7]}, 404, "fixtures: no fixture with id 7"),
        ({"fixtures": [0], "prompts": {"persona": "x"}}, 400, "no prompt 'persona'"),
        ({"fixtures": [0], "prompts": ["x"]}, 400, "prompts: expected an object"),
    ],
)
async def test_a_bad_replay_request_is_refused_with_a_reason(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, message: str
) -> None:
    answer = await client.post("/api/replays", json=body)
    assert answer.status_code == status
    assert message in answer.json()["error"]
