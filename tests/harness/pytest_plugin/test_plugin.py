"""The plugin as installed: loaded by every pytest, free until used, settings found, -n works."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.pytest_plugin.modes import RecordingMode
from harness.pytest_plugin.settings import read_settings
from tests.harness.pytest_plugin.conftest import bundled, write_ini

pytest_plugins = ["pytester"]

TARGET = "agents.booking:agent_factory"


def test_loading_the_plugin_imports_nothing_of_the_harness_beyond_it() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import harness.pytest_plugin.plugin
        heavy = ("pydantic", "httpx", "harness.suites", "harness.channel", "channels", "yaml")
        print(json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )
    assert json.loads(done.stdout) == []


def test_the_plugin_is_registered_through_its_entry_point(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--harness-scenarios=PATH*", "*--harness-record-mode=MODE*"])


def test_options_win_over_the_ini_which_wins_over_tool_harness(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(
        ".toml",
        pyproject='[tool.harness]\ntarget = "from_project:factory"\nchannel = "direct"\n',
    )
    write_ini(pytester, harness_record_mode="once")
    config = pytester.parseconfig()
    settings = read_settings(config)
    assert (settings.target, settings.channel) == ("from_project:factory", "direct")
    assert settings.record_mode is RecordingMode.ONCE
    assert settings.source == str(pytester.path / "pyproject.toml")
    assert settings.import_paths == (str(pytester.path),)
    write_ini(pytester, harness_target="from_ini:factory")
    assert read_settings(pytester.parseconfig()).target == "from_ini:factory"
    given = pytester.parseconfig("--harness-target", "from_option:factory")
    assert read_settings(given).target == "from_option:factory"
    both = pytester.parseconfig("--harness-target-url", "http://127.0.0.1:9/webhook")
    with pytest.raises(ConfigError, match="both name the agent: keep one"):
        read_settings(both)


@pytest.mark.slow
def test_scenarios_and_tests_spread_over_xdist_workers(pytester: pytest.Pytester) -> None:
    write_ini(pytester, harness_target=TARGET, harness_scenarios="scenarios")
    bundled(
        pytester,
        "happy_confirm_button",
        "redelivered_confirm_books_once",
        "burst_answered_once",
        "cancel_booking",
    )
    pytester.makepyfile(
        test_chat="""
        import pytest

        @pytest.mark.parametrize("day", ["friday", "saturday"])
        async def test_proposal(wa, day):
            await wa.say("user", f"Could I book a table for {day} at 9pm?")
            assert "21:00" in wa.replies("user")[0]
        """
    )
    # Each run is killed if it hangs: pytester stops its process on its own timeout only.
    recorded = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--harness-record-mode", "once", timeout=120
    )
    recorded.assert_outcomes(passed=6)
    recorded.stdout.fnmatch_lines(["*2 workers [[]6 items[]]*"])
    assert sorted(p.name for p in Path(pytester.path, "recordings", "test_chat").iterdir()) == [
        "test_proposal_friday",
        "test_proposal_saturday",
    ]
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", timeout=120)
    replayed.assert_outcomes(passed=6)


TWO_CHATS = """
async def test_one(wa):
    await wa.say("user", "hi")


async def test_two(wa):
    await wa.say("user", "hi")
"""


@pytest.mark.parametrize(
    ("ini", "options", "error"),
    [
        (
            {"harness_target": TARGET, "harness_target_url": "http://127.0.0.1:9/webhook"},
            (),
            "harness_target in the pytest ini and harness_target_url in the pytest ini both "
            "name the agent: keep one",
        ),
        (
            {"harness_target": TARGET},
            ("--harness-target-url", "http://127.0.0.1:9/webhook"),
            "harness_target in the pytest ini and --harness-target-url both name the agent: "
            "keep one",
        ),
        (
            {"harness_target": TARGET},
            ("--harness-graph-port", "eighty"),
            "harness_graph_port 'eighty': expected a port number",
        ),
    ],
    ids=["both-in-the-ini", "ini-and-option", "bad-port"],
)
def test_wrong_settings_stop_pytest_at_start_up_with_one_line_naming_them(
    ini: dict[str, str], options: tuple[str, ...], error: str, pytester: pytest.Pytester
) -> None:
    write_ini(pytester, **ini)
    pytester.makepyfile(test_chat=TWO_CHATS)
    result = pytester.runpytest("-p", "no:cacheprovider", *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()] == [f"ERROR: {error}"]
    assert "Traceback" not in result.stdout.str()
    assert "test_one" not in result.stdout.str()  # no test ran


def test_a_wrong_tool_harness_is_one_line_under_each_test_that_uses_it(
    pytester: pytest.Pytester,
) -> None:
    # Read only when a test uses the plugin: a session that does not pays nothing for it.
    pytester.makefile(
        ".toml",
        pyproject=f'[tool.harness]\ntarget = "{TARGET}"\ntarget-url = "http://127.0.0.1:9/webhook"\n',
    )
    write_ini(pytester)
    pytester.makepyfile(test_chat=TWO_CHATS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    line = "*/pyproject.toml: [[]tool.harness[]] sets target and target-url: keep one"
    result.stdout.fnmatch_lines(
        ["*ERROR at setup of test_one*", line, "*ERROR at setup of test_two*", line]
    )
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "During handling" not in out
    assert "raise " not in out  # no source lines of the plugin's
