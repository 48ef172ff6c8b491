"""A project's ``[tool.harness]``: found from the current directory up, checked, and overridden."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from harness.cli.main import EXIT_OK, EXIT_USAGE
from harness.cli.project import NO_FACTORY_TARGET, ProjectSettings, find_project
from harness.exceptions import ConfigError
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[3]
SAYS_HI = "name: {name}\ntags: [{tags}]\nsteps:\n  - say: hello\n  - expect: {{replies: 1}}\n"


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "pyproject.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_without_a_file_nothing_is_set(tmp_path: Path) -> None:
    assert find_project(tmp_path) == ProjectSettings()
    assert ProjectSettings().root is None


def test_the_nearest_file_with_a_harness_table_wins(tmp_path: Path) -> None:
    outer = _write(
        tmp_path,
        '[tool.harness]\ntarget = "bot:factory"\npaths = ["suite", "more/one.yaml"]\n'
        'channel = "direct"\nconcurrency = 2\n',
    )
    _write(tmp_path / "sub", '[project]\nname = "no-harness-here"\n')
    (tmp_path / "sub" / "deeper").mkdir()
    found = find_project(tmp_path / "sub" / "deeper")
    assert found == ProjectSettings(
        file=outer,
        target="bot:factory",
        paths=(tmp_path / "suite", tmp_path / "more" / "one.yaml"),
        channel="direct",
        concurrency=2,
    )
    assert found.root == tmp_path
    inner = _write(tmp_path / "sub", '[tool.harness]\ntarget-url = "http://127.0.0.1:9/webhook"\n')
    assert find_project(tmp_path / "sub") == ProjectSettings(
        file=inner, target_url="http://127.0.0.1:9/webhook"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.harness\n", "not valid TOML: "),
        (
            '[tool.harness]\ntarget_url = "x"\n',
            "unknown key 'target_url' (did you mean 'target-url'?)",
        ),
        ("[tool.harness]\nseed = 3\n", "unknown key 'seed' (known: target, target-url, paths"),
        ("[tool.harness]\ntarget = 3\n", "[tool.harness] target: expected a non-empty text, got 3"),
        ('[tool.harness]\npaths = [""]\n', "paths: expected a list of folders or files, got ['']"),
        ("[tool.harness]\nconcurrency = 0\n", "concurrency: expected a whole number of at least 1"),
        ("[tool.harness]\nconcurrency = true\n", "concurrency: expected a whole number"),
        (
            '[tool.harness]\ntarget = "a:b"\ntarget-url = "http://x"\n',
            "sets target and target-url: keep one",
        ),
        ("[tool]\nharness = 3\n", "[tool.harness] must be a table"),
    ],
)
def test_every_problem_is_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        find_project(tmp_path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_single_path_may_be_a_string(tmp_path: Path) -> None:
    _write(tmp_path, '[tool.harness]\npaths = "suite"\n')
    assert find_project(tmp_path).paths == (tmp_path / "suite",)


def test_this_repository_names_the_bundled_agent_for_its_scenarios() -> None:
    found = find_project(ROOT)
    assert found.target == "agents.booking:agent_factory"
    assert found.paths == (ROOT / "scenarios",)


# -- harness run with a project ----------------------------------------------------------


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> str:
    """A module name of the test's own (none imported before); sys.path is restored after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    return f"projbot_{uuid.uuid4().hex[:10]}"


def _project(tmp_path: Path, bot: str, settings: str) -> Path:
    """A project whose agent is the booking agent, in a module of its own."""
    (tmp_path / f"{bot}.py").write_text(
        "from agents.booking import agent_factory as factory\n", encoding="utf-8"
    )
    suite = tmp_path / "suite"
    suite.mkdir()
    for name, tags in (("greets", "greeting"), ("books", "booking, slow"), ("other", "misc")):
        (suite / f"{name}.yaml").write_text(SAYS_HI.format(name=name, tags=tags), "utf-8")
    _write(tmp_path, f'[tool.harness]\ntarget = "{bot}:factory"\npaths = ["suite"]\n{settings}')
    return tmp_path


def test_run_takes_the_target_paths_channel_and_concurrency_from_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    project = _project(tmp_path, bot, 'channel = "direct"\nconcurrency = 1\n')
    # From a folder below the project's: the target is imported from the project's folder.
    monkeypatch.chdir(project / "suite")
    assert _harness("run") == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"3 scenarios against {bot}:factory (from {project / 'pyproject.toml'}), "
        "through the direct channel"
    )
    assert "3 scenarios: 3 passed" in out


def test_flags_win_over_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    project = _project(tmp_path, bot, 'channel = "direct"\nconcurrency = 0\n')
    monkeypatch.chdir(project)
    # The project's file is checked even when flags would override it.
    assert _harness("run", "--concurrency", "1") == EXIT_USAGE
    assert "concurrency: expected a whole number of at least 1" in capsys.readouterr().err
    _write(project, '[tool.harness]\ntarget = "nowhere:factory"\nchannel = "telegram"\n')
    code = _harness(
        "run",
        str(project / "suite" / "greets.yaml"),
        "--target",
        f"{bot}:factory",
        "--channel",
        "whatsapp",
    )
    assert code == EXIT_OK
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"1 scenario against {bot}:factory (from --target), through the whatsapp channel"
    )


def test_a_project_target_url_is_used_as_if_given_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    project = _project(tmp_path, bot, "")
    _write(project, '[tool.harness]\ntarget-url = "http://127.0.0.1:9/webhook"\n')
    monkeypatch.chdir(project)
    # Nothing listens there: the run stops before it plays anything, naming that URL.
    code = _harness("run", "suite/greets.yaml", "--graph-port", "0", "--expect-timeout", "1s")
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out.splitlines()[0] == (
        "1 scenario against http://127.0.0.1:9/webhook "
        f"(from {project / 'pyproject.toml'}), through the whatsapp channel"
    )
    assert "--target-url http://127.0.0.1:9/webhook: nothing answers" in captured.err


def test_record_takes_its_target_from_the_project_and_never_a_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], bot: str
) -> None:
    project = _project(tmp_path, bot, "")
    monkeypatch.chdir(project / "suite")
    assert _harness("record", "greets.yaml", "--out", str(tmp_path / "fixture")) == EXIT_OK
    meta = json.loads((tmp_path / "fixture" / "meta.json").read_text(encoding="utf-8"))
    assert meta["agent_version"] == f"{bot}:factory"
    capsys.readouterr()
    (project / "pyproject.toml").write_text('[tool.harness]\npaths = ["suite"]\n', "utf-8")
    assert _harness("record", "greets.yaml", "--out", str(tmp_path / "again")) == EXIT_USAGE
    # harness record runs the agent in-process: the line names no option it lacks.
    assert capsys.readouterr().err == f"error: {NO_FACTORY_TARGET}\n"
    assert "--target-url" not in NO_FACTORY_TARGET
    assert not (tmp_path / "again").exists()
    _write(project, '[tool.harness]\ntarget-url = "http://127.0.0.1:9/webhook"\n')
    assert _harness("record", "greets.yaml", "--out", str(tmp_path / "again")) == EXIT_USAGE
    assert "harness record runs the agent in-process" in capsys.readouterr().err
