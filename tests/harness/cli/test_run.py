"""``harness run`` chooses and shows scenarios as pytest does: -k, -x, --lf, --list, -q and -v.

Each test runs the command in-process against the bundled agent through the
direct channel (quick), from a folder of its own, so the last-failed cache
it writes is its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tests.support.cli import harness as _harness

PASSES = """\
name: {name}
steps:
  - say: friday at 8pm
  - expect: {{reply_contains: Friday, replies: 1}}
"""
FAILS = """\
name: {name}
steps:
  - say: friday at 8pm
  - expect: {{reply_contains: Saturday}}
"""
TARGET = "agents.booking:agent_factory"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with two passing and two failing scenarios, made the current directory."""
    root = tmp_path / "suite"
    root.mkdir()
    for stem, text, name in [
        ("a_book", PASSES, "book a table"),
        ("b_wrong_day", FAILS, "wrong day expected"),
        ("c_book_again", PASSES, "book another table"),
        ("d_also_wrong", FAILS, "also wrong"),
    ]:
        (root / f"{stem}.yaml").write_text(text.format(name=name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return root


def _run(*args: str) -> int:
    return _harness("run", "suite", "--target", TARGET, "--channel", "direct", *args)


def _played(report_dir: Path) -> list[str]:
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    return [scenario["name"] for scenario in report["scenarios"]]


def test_k_runs_the_scenarios_whose_names_match(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-k", "book and not again", "--report-dir", "r") == EXIT_OK
    assert _played(Path("r")) == ["book a table"]
    assert capsys.readouterr().out.startswith("1 scenario against ")


def test_k_matches_the_file_name_too(suite: Path) -> None:
    assert _run("-k", "b_wrong", "--report-dir", "r") == EXIT_FAILED
    assert _played(Path("r")) == ["wrong day expected"]


def test_a_malformed_k_expression_is_a_usage_error(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-k", "book and") == EXIT_USAGE
    assert capsys.readouterr().err.startswith("error: -k 'book and': the expression ends too soon")


def test_fail_fast_starts_no_scenario_after_the_first_failure(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-x", "--concurrency", "1", "--report-dir", "r") == EXIT_FAILED
    assert _played(Path("r")) == ["book a table", "wrong day expected"]
    assert "stopped after the first failure (-x): 2 not run" in capsys.readouterr().out


def test_without_fail_fast_every_scenario_runs(suite: Path) -> None:
    assert _run("--concurrency", "1", "--report-dir", "r") == EXIT_FAILED
    assert len(_played(Path("r"))) == 4


def test_lf_runs_only_what_failed_last_time_and_forgets_what_then_passed(
    suite: Path, tmp_path: Path
) -> None:
    assert _run("--report-dir", "first") == EXIT_FAILED
    cache = json.loads((tmp_path / ".harness_cache" / "lastfailed.json").read_text("utf-8"))
    assert cache == {
        "suite/b_wrong_day.yaml::wrong day expected": True,
        "suite/d_also_wrong.yaml::also wrong": True,
    }
    assert (tmp_path / ".harness_cache" / ".gitignore").read_text("utf-8").endswith("*\n")
    assert _run("--lf", "--report-dir", "second") == EXIT_FAILED
    assert _played(Path("second")) == ["wrong day expected", "also wrong"]
    # The failing scenario is fixed: --lf runs it, it passes, and is forgotten.
    (suite / "b_wrong_day.yaml").write_text(PASSES.format(name="wrong day expected"), "utf-8")
    assert _run("--lf", "--report-dir", "third") == EXIT_FAILED
    assert _played(Path("third")) == ["wrong day expected", "also wrong"]
    assert _run("--lf", "--report-dir", "fourth") == EXIT_FAILED
    assert _played(Path("fourth")) == ["also wrong"]


def test_lf_runs_everything_when_nothing_failed_before(suite: Path) -> None:
    assert _run("--lf", "-k", "book", "--report-dir", "r") == EXIT_OK
    assert _played(Path("r")) == ["book a table", "book another table"]


def test_list_prints_the_selection_without_running_or_needing_a_target(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _harness("run", "suite", "--list", "-k", "wrong") == EXIT_OK
    assert capsys.readouterr().out == (
        "suite/b_wrong_day.yaml::wrong day expected\n"
        "suite/d_also_wrong.yaml::also wrong\n"
        "2 scenarios selected\n"
    )
    assert not Path(".harness_cache").exists()


def test_q_prints_failures_and_totals_without_progress_or_table(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-q") == EXIT_FAILED
    out = capsys.readouterr().out
    assert "PASS  book a table" not in out  # no line per scenario
    assert "Scenario" not in out  # no table heading
    assert "FAIL wrong day expected" in out  # each failure's details
    assert "4 scenarios: 2 passed, 2 failed, 0 errors" in out


def test_v_prints_a_line_for_each_scenario_as_it_finishes(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-v", "-k", "book") == EXIT_OK
    out = capsys.readouterr().out
    assert "PASS  book a table (" in out
    assert "PASS  book another table (" in out


def _table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if ".yaml " in line and "direct " in line]


def test_the_table_lists_failures_with_their_files_and_counts_the_passes(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run() == EXIT_FAILED
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert [row.split()[:3] for row in rows] == [
        ["wrong", "day", "expected"],
        ["also", "wrong", "suite/d_also_wrong.yaml"],
    ]
    assert "suite/b_wrong_day.yaml" in rows[0]
    assert "2 passed (-v lists them)" in out.splitlines()


def test_with_v_the_table_lists_the_passes_too(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-v") == EXIT_FAILED
    out = capsys.readouterr().out
    assert len(_table_rows(out)) == 4
    assert "(-v lists them)" not in out


def test_the_run_says_the_offline_stand_in_answered_not_the_model_it_names(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run("-k", "book", "--report-dir", "r") == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    [model] = [line for line in lines if line.startswith("model: ")]
    assert model.endswith(
        " model calls: the offline stand-in (no model), asked for claude-sonnet-4-6"
    )
    report = json.loads((Path("r") / "report.json").read_text(encoding="utf-8"))
    [counted] = report["summary"]["models"]
    assert (counted["provider"], counted["source"]) == ("offline-stand-in", "live")
    assert model == f"model: {counted['label']}"
    html = (Path("r") / "report.html").read_text(encoding="utf-8")
    assert "model call · the offline stand-in (no model), asked for claude-sonnet-4-6" in html


def test_record_names_the_offline_stand_in_as_each_answer_is_recorded(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _harness("record", "suite/a_book.yaml", "--target", TARGET, "--out", "fixture")
    assert code == EXIT_OK
    models = [line for line in capsys.readouterr().out.splitlines() if " model " in line]
    assert models
    stand_in = "model the offline stand-in (no model), asked for claude-sonnet-4-6: "
    assert all(line.split("s  ", 1)[1].startswith(stand_in) for line in models)
    meta = json.loads((Path("fixture") / "meta.json").read_text(encoding="utf-8"))
    assert (meta["model"], meta["provider"]) == ("claude-sonnet-4-6", "offline-stand-in")


def test_record_into_an_existing_fixture_names_the_option_that_replaces_it(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("fixture").mkdir()
    Path("fixture", "meta.json").write_text("{}", encoding="utf-8")
    code = _harness("record", "suite/a_book.yaml", "--target", TARGET, "--out", "fixture")
    assert code == EXIT_USAGE
    said = "fixture: already holds a fixture (meta.json); pass --overwrite to replace it"
    assert capsys.readouterr().err == f"error: {said}\n"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--target", TARGET), "error: --keep-numbers needs --target-url"),
        (
            ("--target-url", "http://127.0.0.1:9/webhook", "--distributed", "redis://x:1/1"),
            "error: --keep-numbers runs the scenarios one at a time: not with --distributed",
        ),
    ],
)
def test_keep_numbers_outside_a_run_at_a_url_is_a_usage_error(
    suite: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], said: str
) -> None:
    assert _harness("run", "suite", "--keep-numbers", *extra) == EXIT_USAGE
    assert capsys.readouterr().err.startswith(said)


UNWRAPPED_BOT = """
from tests.bots import inline


def factory(env):  # calls no model through the harness, and no tool
    return inline.create_app(dict(env.settings), client=env.http_client)
"""


def test_record_notes_the_calls_the_harness_never_saw(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("unwrapped_bot.py").write_text(UNWRAPPED_BOT, encoding="utf-8")
    assert _harness("record", "suite/a_book.yaml", "--target", TARGET, "--out", "wrapped") in (
        EXIT_OK,
        EXIT_FAILED,
    )
    assert "note:" not in capsys.readouterr().err  # the booking agent wraps both
    code = _harness(
        "record", "suite/a_book.yaml", "--target", "unwrapped_bot:factory", "--out", "bare"
    )
    assert code in (EXIT_OK, EXIT_FAILED)
    err = capsys.readouterr().err
    assert err.startswith(
        "note: the agent's model calls and tool calls went past the harness, so the fixture "
        "does not hold them"
    ), err
    assert "harness.recording.wrap(client, env)" in err
