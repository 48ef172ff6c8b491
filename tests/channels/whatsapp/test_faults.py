"""Fault profiles from the places a user writes them: presets, files, key=value lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from channels.whatsapp.faults import PRESETS, FaultProfile, check_scenario_faults
from harness.exceptions import ConfigError
from harness.suites.yamlpos import LocatedError


def test_a_yaml_file_is_read_as_yaml_1_2(tmp_path: Path) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text("duplicate: 0.5\nsame_second: true\nbatch: 0o3\nseed: 010\n")
    assert FaultProfile.parse(path) == FaultProfile(
        duplicate=0.5, same_second=True, batch=3, seed=10
    )


def test_a_json_file_and_a_preset_and_a_mapping_are_read(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    path.write_text('{"reorder": 0.25}')
    assert FaultProfile.parse(str(path)) == FaultProfile(reorder=0.25)
    assert FaultProfile.parse("flaky") == PRESETS["flaky"]
    assert FaultProfile.parse({"preset": "flaky", "duplicate": 0}).duplicate == 0


def test_key_value_settings_are_read_as_yaml_scalars() -> None:
    profile = FaultProfile.parse("duplicate=0.5, same-second=true, batch=4")
    assert profile == FaultProfile(duplicate=0.5, same_second=True, batch=4)
    assert FaultProfile.parse("seed=010").seed == 10  # YAML 1.2, as in a file


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("duplicate: [0.5\n", "faults.yaml:2: invalid YAML: expected ',' or ']'"),
        ("duplicate: 0.5\nduplicate: 0.1\n", "faults.yaml:2: duplicate: duplicate key"),
        ("- duplicate\n", "faults.yaml: a fault profile must be a mapping"),
        ("duplicate: 2\n", "faults.yaml: field duplicate: Input should be less than"),
    ],
)
def test_a_bad_yaml_file_is_one_line_naming_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "faults.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        FaultProfile.parse(path)
    assert str(caught.value).startswith(f"{tmp_path}/{message}")


def test_a_bad_key_value_setting_names_the_setting() -> None:
    with pytest.raises(ConfigError) as caught:
        FaultProfile.parse("duplicate=[0.5")
    assert str(caught.value) == "fault profile: 'duplicate=[0.5': the value is not valid YAML"
    with pytest.raises(ConfigError, match="'duplicate' is not key=value"):
        FaultProfile.parse("duplicate,x=1")


@pytest.mark.parametrize(
    "spec",
    [None, "none", "flaky", {"duplicate": 0.5}, {"preset": "flaky", "duplicate": 0}, "batch=5"],
)
def test_what_a_scenario_may_write_under_faults_passes_the_check(spec: object) -> None:
    check_scenario_faults(spec)


@pytest.mark.parametrize(
    ("spec", "loc", "message"),
    [
        ("flakey", (), "unknown preset 'flakey' (did you mean 'flaky'?); presets: batched,"),
        ({"preset": "bursti"}, ("preset",), "unknown preset 'bursti' (did you mean 'bursty'?)"),
        ({"reordr": 0.1}, ("reordr",), "unknown fault setting (did you mean 'reorder'?); settings"),
        ({"batch": 0}, ("batch",), "input should be greater than or equal to 1"),
        ({"seed": 3}, ("seed",), "faults are seeded by the scenario's seed: set it at the top"),
        (["flaky"], (), "expected a preset name or a mapping of fault settings"),
    ],
)
def test_a_bad_fault_setting_is_named_for_its_line(
    spec: object, loc: tuple[str, ...], message: str
) -> None:
    with pytest.raises(LocatedError) as caught:
        check_scenario_faults(spec)
    assert caught.value.loc == loc
    assert str(caught.value).startswith(message)
