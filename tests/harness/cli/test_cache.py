"""The last-failed cache: read leniently, updated as pytest updates its own."""

from __future__ import annotations

from pathlib import Path

from harness.cli.cache import CACHE_DIR, LastFailed
from harness.results import ScenarioResult
from harness.suites.scenario import parse_scenario


def _result(name: str, status: str, path: Path) -> ScenarioResult:
    return ScenarioResult.model_validate({"name": name, "status": status, "path": str(path)})


def test_a_cache_that_is_not_json_counts_as_empty(tmp_path: Path) -> None:
    (tmp_path / CACHE_DIR).mkdir()
    (tmp_path / CACHE_DIR / "lastfailed.json").write_text("{not json", encoding="utf-8")
    assert LastFailed(tmp_path).failed == set()


def test_scenarios_not_run_keep_their_state_and_skipped_ones_change_nothing(
    tmp_path: Path,
) -> None:
    file = tmp_path / "suite" / "a.yaml"
    cache = LastFailed(tmp_path)
    cache.update([_result("one", "failed", file), _result("two", "error", file)])
    again = LastFailed(tmp_path)
    assert again.failed == {"suite/a.yaml::one", "suite/a.yaml::two"}
    again.update([_result("one", "passed", file), _result("two", "skipped", file)])
    assert LastFailed(tmp_path).failed == {"suite/a.yaml::two"}


def test_select_keeps_the_failed_ones_in_the_suites_order(tmp_path: Path) -> None:
    first = parse_scenario("name: first\nsteps:\n  - say: hi\n", path=tmp_path / "a.yaml")
    second = parse_scenario("name: second\nsteps:\n  - say: hi\n", path=tmp_path / "b.yaml")
    cache = LastFailed(tmp_path)
    assert cache.select([first, second]) == [first, second]
    cache.update([_result("second", "failed", tmp_path / "b.yaml")])
    assert cache.select([first, second]) == [second]
