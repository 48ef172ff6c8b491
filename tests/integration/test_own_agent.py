"""A user's own bot, tested as the tutorial shows: its factory, its pyproject.toml, no PYTHONPATH.

The files of the tutorial "Test your own WhatsApp bot in ten minutes" are
written into a fresh project and ``harness run`` is started there as a user
starts it: from the project's folder or one below it, in-process and against
the bot served at a URL, and with a suite large enough for worker processes.
Bots that break the factory's contract (one app for every scenario, a queue
made at import time) get one line that says what is wrong, never asyncio's
tracebacks.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.agent_contract import FRESH_AGENT_ADVICE
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots.loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "harness"
TUTORIAL = ROOT / "docs" / "tutorials" / "own-bot.md"
ECHO = """\
steps:
  - say: hello {n}
  - expect: {{reply_contains: "You said: hello {n}", replies: 1}}
"""
NOISE = ("Traceback", "never retrieved", "Exception in callback")


def _tutorial_files() -> dict[str, str]:
    """The files the tutorial's code blocks name on their first line (``# mybot.py``)."""
    files = {}
    for body in re.findall(r"```\w+\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), re.S):
        named = re.fullmatch(r"# ([\w./-]+\.(?:py|toml|yaml))", body.splitlines()[0])
        if named:
            files[named.group(1)] = body
    return files


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _environment() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, none of the harness's variables."""
    return {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH" and not k.startswith(("HARNESS_", "WHATSAPP_"))
    }


def _harness(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The ``harness`` script as a user runs it (``python -m`` puts the folder on the path)."""
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_environment(),
        timeout=timeout,
        check=False,
    )


def _suite(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"echo_{n:03d}.yaml").write_text(ECHO.format(n=n), encoding="utf-8")
    return folder


# -- the tutorial's project --------------------------------------------------------------


def test_the_tutorial_names_a_bot_a_ten_line_factory_a_pyproject_and_a_scenario() -> None:
    files = _tutorial_files()
    assert set(files) == {"mybot.py", "harness_target.py", "pyproject.toml", "scenarios/echo.yaml"}
    factory = [line for line in files["harness_target.py"].splitlines() if line.strip()]
    assert len(factory) <= 10
    assert 'target = "harness_target:factory"' in files["pyproject.toml"]


@pytest.mark.parametrize("where", [".", "scenarios"], ids=["project-folder", "a-folder-below"])
def test_the_tutorial_project_runs_with_no_target_flag_and_no_pythonpath(
    tmp_path: Path, where: str
) -> None:
    project = _project(tmp_path / "project", _tutorial_files())
    done = _harness("run", "--report-dir", str(tmp_path / "reports"), cwd=project / where)
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    pyproject = (project / "pyproject.toml").resolve()
    assert first == (
        f"1 scenario against harness_target:factory (from {pyproject}), "
        "through the whatsapp channel"
    )
    report = json.loads((tmp_path / "reports" / "report.json").read_text(encoding="utf-8"))
    assert report["target"] == "harness_target:factory"
    assert [s["status"] for s in report["scenarios"]] == ["passed"]


def test_without_a_target_anywhere_the_run_stops_and_says_how_to_name_one(tmp_path: Path) -> None:
    files = {k: v for k, v in _tutorial_files().items() if k != "pyproject.toml"}
    project = _project(tmp_path / "project", files)
    done = _harness("run", cwd=project)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "error: no agent to test: give --target package.module:factory (or --target-url URL), "
        'or set target = "package.module:factory" under [tool.harness] in pyproject.toml\n'
    )
    # Named on the command line, the factory is found in the current directory.
    named = _harness("run", "--target", "harness_target:factory", "scenarios", cwd=project)
    assert named.returncode == 0, named.stdout + named.stderr
    assert "1 passed" in named.stdout


@pytest.mark.network
def test_the_tutorial_bot_at_a_url_passes_the_same_suite(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", _tutorial_files())
    commands = re.search(r"```sh\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), re.S)
    assert commands is not None
    shell = commands.group(1).replace("\\\n", " ")
    settings = dict(re.findall(r"\b(WHATSAPP_\w+)=(\S+)", shell))
    assert set(settings) == {
        "WHATSAPP_GRAPH_URL",
        "WHATSAPP_ACCESS_TOKEN",
        "WHATSAPP_PHONE_NUMBER_ID",
        "WHATSAPP_APP_SECRET",
        "WHATSAPP_VERIFY_TOKEN",
    }
    run_line = next(line for line in shell.splitlines() if line.startswith("harness run"))
    bot_port, graph_port = free_port(), free_port()
    settings["WHATSAPP_GRAPH_URL"] = settings["WHATSAPP_GRAPH_URL"].replace("8000", str(graph_port))
    bot = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "--factory", "mybot:create_app"),
            *("--port", str(bot_port), "--log-level", "warning"),
        ],
        cwd=project,
        env={**_environment(), **settings},
    )
    try:
        _wait_for(f"http://127.0.0.1:{bot_port}/webhook")
        args = run_line.split()[1:]
        args[args.index("--target-url") + 1] = f"http://127.0.0.1:{bot_port}/webhook"
        done = _harness(
            *args,
            *("--graph-port", str(graph_port), "--quiet", "0.5s", "--expect-timeout", "5s"),
            cwd=project,
        )
    finally:
        bot.terminate()
        try:
            bot.wait(timeout=10)
        except subprocess.TimeoutExpired:
            bot.kill()
            bot.wait()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 scenario: 1 passed" in done.stdout


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(url, params={"hub.mode": "subscribe"}, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


@pytest.mark.slow
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="worker processes need two cores")
def test_worker_processes_import_the_target_from_the_current_directory(tmp_path: Path) -> None:
    # A bot that says which process answered: a suite of a hundred runs in worker processes.
    files = _tutorial_files()
    files["mybot.py"] = files["mybot.py"].replace(
        '"text": {"body": f"You said: {text}"}',
        '"text": {"body": f"You said: {text} ({os.getpid()})"}',
    )
    assert "os.getpid()" in files["mybot.py"]
    project = _project(tmp_path / "project", files)
    _suite(project / "many", 100)
    done = _harness("run", "many", "--report-dir", "reports", cwd=project, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = json.loads((project / "reports" / "report.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in report["scenarios"]] == ["passed"] * 100
    pids = {
        re.findall(r"\((\d+)\)$", event["text"])[0]
        for scenario in report["scenarios"]
        for event in scenario["conversation"]["events"]
        if event["kind"] == "send" and event.get("text")
    }
    assert len(pids) >= 2  # more than one process answered: the workers imported mybot


# -- bots that break the contract ----------------------------------------------------------


def _result_lines(output: str) -> list[str]:
    """The one line each scenario gets as it ends (not the headings of the details below)."""
    return [
        line
        for line in output.splitlines()
        if re.match(r"(PASS|FAIL|ERROR) +echo_\d{3}(: | \(\d)", line)
    ]


def test_a_bot_built_once_at_import_time_gets_one_line_per_spoiled_scenario(
    tmp_path: Path,
) -> None:
    suite = _suite(tmp_path / "suite", 6)
    done = _harness("run", str(suite), "--target", "tests.bots.careless:shared_factory", cwd=ROOT)
    assert done.returncode == 1
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr
    expected = (
        "the agent factory tests.bots.careless:shared_factory returned the same Starlette "
        f"object for two scenarios, which then share their state: {FRESH_AGENT_ADVICE}"
    )
    results = _result_lines(done.stdout)
    assert len(results) == 6
    # One scenario builds the app; the five others are refused (at the default concurrency
    # of 4). The one that got it shares it with their settings and clients meanwhile, so it
    # may pass or not: either way it gets a line of its own, and no traceback.
    refused = [line for line in results if line.endswith(f": {expected}")]
    assert len(refused) == 5
    assert all(line.startswith("ERROR ") for line in refused)
    assert "6 scenarios against tests.bots.careless:shared_factory" in done.stdout
    assert re.search(r"6 scenarios: [01] passed, [01] failed, [56] errors", done.stdout)


def test_a_queue_made_at_import_time_is_explained_not_printed(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite", 8)
    done = _harness("run", str(suite), "--target", "tests.bots.careless:queue_factory", cwd=ROOT)
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr
    results = _result_lines(done.stdout)
    assert len(results) == 8
    # Scenarios on the loop that owns the queue may pass, or fail on replies meant for
    # another scenario; those on the other threads' loops lose their sender, and say why.
    errors = [line for line in results if line.startswith("ERROR ")]
    assert errors
    for line in errors:
        assert "the agent used an object made on another scenario's event loop" in line
        assert "is bound to a different event loop" in line
        assert line.endswith(FRESH_AGENT_ADVICE)


def test_a_queue_bound_to_an_earlier_loop_spoils_the_next_scenario() -> None:
    scenario = parse_scenario(ECHO.format(n=1))
    options = RunOptions(target="tests.bots.careless:queue_factory", concurrency=1)
    # Two runs, two event loops: the queue belongs to the first loop that waited on it.
    asyncio.run(Runner(options).run([scenario]))
    second = asyncio.run(Runner(options).run([scenario])).scenarios[0]
    assert second.status == "error"
    assert second.error is not None
    assert second.error.startswith(
        "the agent used an object made on another scenario's event loop (RuntimeError: <Queue"
    )
    assert "\n" not in second.error
