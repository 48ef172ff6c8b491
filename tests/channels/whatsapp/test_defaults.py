"""The simulator's plain default values agree with its settings model; the help shows them."""

from __future__ import annotations

import click

from channels.whatsapp._defaults import SIMULATOR_DEFAULTS
from channels.whatsapp.cli import serve_command
from channels.whatsapp.config import SimulatorConfig


def test_the_plain_defaults_and_the_settings_model_agree_field_by_field() -> None:
    fields = SimulatorConfig.model_fields
    plain = {name for name, info in fields.items() if info.default_factory is None}
    assert set(SIMULATOR_DEFAULTS) == plain
    made = SimulatorConfig()
    for name, value in SIMULATOR_DEFAULTS.items():
        assert fields[name].default == value, name
        assert type(getattr(made, name)) is type(value), name


def test_the_simulator_options_default_to_the_simulators_settings() -> None:
    made = SimulatorConfig()
    shown = {}
    with click.Context(serve_command) as ctx:
        for param in serve_command.params:
            if type(param).__name__ == "_SimulatorDefault":
                assert isinstance(param, click.Option)
                shown[param.name] = param.get_default(ctx)
                assert param.show_default, param.name
    assert set(shown) == {
        "app_secret",
        "verify_token",
        "access_token",
        "phone_number_id",
        "waba_id",
        "display_phone_number",
    }
    assert shown == {name: getattr(made, name) for name in shown}
