"""Loading the agent under test: from the current directory, a project's folder, a worker process.

Each test writes its bot module under a name of its own, so that no test finds
another's module already imported; ``sys.path`` is restored after each.
"""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import sys
import uuid
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.suites._spread import _run_in_worker, _start_worker
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.suites.target import importable, load_target

FACTORY = """\
from agents.booking import agent_factory


def factory(env):
    return agent_factory(env)
"""


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


def _module(folder: Path) -> str:
    name = f"userbot_{uuid.uuid4().hex[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(FACTORY, encoding="utf-8")
    return name


def test_a_module_in_the_current_directory_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert str(tmp_path) not in sys.path
    factory = load_target(f"{name}:factory")
    assert factory.__module__ == name
    assert sys.path[-1] == str(tmp_path)  # after the installed packages, never before them


def test_a_module_in_a_folder_to_search_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = _module(tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"can't import {name}"):
        load_target(f"{name}:factory")
    assert load_target(f"{name}:factory", search=[tmp_path / "project"]).__module__ == name


def test_folders_are_added_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    importable([tmp_path, str(tmp_path / "x"), tmp_path / "x"])
    importable([tmp_path / "x"])
    assert sys.path.count(str(tmp_path)) == 1
    assert sys.path.count(str(tmp_path / "x")) == 1


def test_a_folder_named_like_an_installed_package_is_not_imported_and_the_error_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "agents"
    mine.mkdir()
    (mine / "__init__.py").write_text("", encoding="utf-8")
    (mine / "mybot.py").write_text(FACTORY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_target("agents.mybot:factory")
    message = str(caught.value)
    assert message.startswith(
        "--target 'agents.mybot:factory': can't import agents.mybot: No module named "
        "'agents.mybot' (agents is the installed package at "
    )
    assert message.endswith(": rename yours)")
    # The harness's own agents package is untouched.
    assert load_target("agents.booking:agent_factory").__module__.startswith("agents.booking")


def _spawned(options: RunOptions, scenario_text: str) -> tuple[str, str | None, list[str]]:
    """In a fresh process: run one scenario as a worker of a large suite does."""
    _start_worker(Runner, options, (parse_scenario(scenario_text),), "worker", (700, 10, 10))
    result = _run_in_worker((0,))[0]
    return result.status, result.error, list(sys.path)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["cwd", "search"])
def test_a_worker_process_imports_the_target_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    folder = tmp_path / "project"
    name = _module(folder)
    monkeypatch.chdir(folder if where == "cwd" else tmp_path)
    search = (str(folder),) if where == "search" else ()
    options = RunOptions(channel="direct", target=f"{name}:factory", import_paths=search)
    # This process never imports it: the worker finds it on its own.
    assert name not in sys.modules
    assert str(folder) not in sys.path
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        spawned = pool.submit(
            _spawned, options, "steps:\n  - say: hello\n  - expect: {replies: 1}\n"
        )
        try:
            status, error, path = spawned.result(timeout=120)
        except BaseException:
            # A worker that hangs must not hang the pool's shutdown, and the test with it.
            for worker in list(pool._processes.values()):
                worker.kill()
            raise
    assert (status, error) == ("passed", None)
    assert str(folder) in path


def test_a_worker_builds_its_runner_once_and_runs_the_scenarios_it_is_handed() -> None:
    # The options reach a worker once, pickled: the runner (and the agent it builds) is made
    # once for the run, not per scenario, and each scenario runs in a namespace of its own.
    built: list[RunOptions] = []

    def make(options: RunOptions) -> Runner:
        built.append(options)
        return Runner(options)

    options = pickle.loads(pickle.dumps(RunOptions(channel="direct")))
    scenarios = tuple(
        parse_scenario(f"name: s{i}\nsteps:\n  - say: hello {i}\n  - expect: {{replies: 1}}\n")
        for i in range(3)
    )
    _start_worker(make, options, scenarios, "run-a", gc.get_threshold())
    results = _run_in_worker((2, 0, 1))
    assert [r.name for r in results] == ["s2", "s0", "s1"]
    assert all(r.status == "passed" for r in results), [r.error for r in results]
    assert len(built) == 1
