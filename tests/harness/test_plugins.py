"""Channel plugins from entry points: the installed ones, and fake distributions that go wrong.

A fake distribution is a ``*.dist-info`` directory (METADATA and
entry_points.txt) and its modules, written under a temporary directory put
on ``sys.path`` for one test; its entry points live in a group of their own,
so the installed channels never see them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from channels.direct import DirectChannel
from channels.whatsapp.channel import WhatsAppChannel
from harness.channel import ChannelSetup, UserSpec
from harness.exceptions import ConfigError
from harness.plugins import ENTRY_POINT_GROUP, ChannelPlugin, load_channel_plugins

GROUP = "harness.test_channels"
GOOD = """\
from harness.plugins import ChannelPlugin

plugin = ChannelPlugin(name="carrier_pigeon", description="By bird.", factory=dict)
"""


class FakeSite:
    """A directory on ``sys.path`` that fake distributions are written into."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def install(self, entry_points: Mapping[str, str], modules: Mapping[str, str]) -> None:
        """Write one distribution declaring ``entry_points`` in :data:`GROUP`, and its modules."""
        info = self.root / "fake_dist-0.0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: fake-dist\nVersion: 0.0.0\n", encoding="utf-8"
        )
        lines = [f"[{GROUP}]", *(f"{name} = {value}" for name, value in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for name, source in modules.items():
            (self.root / f"{name}.py").write_text(source, encoding="utf-8")
        importlib.invalidate_caches()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[FakeSite]:
    root = tmp_path / "site"
    root.mkdir()
    sys.path.insert(0, str(root))
    try:
        yield FakeSite(root)
    finally:
        sys.path.remove(str(root))
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", None) or "").startswith(str(root)):
                del sys.modules[name]
        importlib.invalidate_caches()


def test_the_installed_channels_load() -> None:
    plugins = load_channel_plugins()
    assert ENTRY_POINT_GROUP == "harness.channels"
    assert sorted(plugins) == ["direct", "whatsapp"]
    assert all(isinstance(p, ChannelPlugin) for p in plugins.values())
    assert all(p.description for p in plugins.values())
    setup = ChannelSetup(
        users=[UserSpec(name="Ana", wa_id="15550001111")], agent_factory=lambda env: None
    )
    assert isinstance(plugins["direct"].factory(setup), DirectChannel)
    assert list(plugins["direct"].commands) == []
    assert isinstance(plugins["whatsapp"].factory(setup), WhatsAppChannel)
    assert [c.name for c in plugins["whatsapp"].commands] == ["serve", "proxy", "load"]


def test_a_group_nobody_uses_has_no_plugins() -> None:
    assert load_channel_plugins(group="harness.no_such_group") == {}


def test_a_plugin_is_keyed_by_its_own_name(site: FakeSite) -> None:
    site.install({"pigeon_entry": "fake_pigeon:plugin"}, {"fake_pigeon": GOOD})
    plugins = load_channel_plugins(group=GROUP)
    assert list(plugins) == ["carrier_pigeon"]
    assert plugins["carrier_pigeon"] is sys.modules["fake_pigeon"].plugin
    # The installed channels are in their own group, untouched.
    assert sorted(load_channel_plugins()) == ["direct", "whatsapp"]


def test_a_plugin_that_fails_to_import_names_its_entry_point(site: FakeSite) -> None:
    site.install(
        {"pigeon": "fake_pigeon:plugin", "broken": "fake_broken:plugin"},
        {"fake_pigeon": GOOD, "fake_broken": 'raise RuntimeError("no birds today")\n'},
    )
    with pytest.raises(ConfigError) as caught:
        load_channel_plugins(group=GROUP)
    assert str(caught.value) == (
        "channel plugin 'broken' (fake_broken:plugin) failed to load: no birds today"
    )
    assert isinstance(caught.value.__cause__, RuntimeError)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        pytest.param("fake_gone:plugin", "No module named 'fake_gone'", id="no-module"),
        pytest.param("fake_pigeon:pigeon", "has no attribute 'pigeon'", id="no-attribute"),
    ],
)
def test_an_entry_point_that_does_not_resolve(site: FakeSite, value: str, reason: str) -> None:
    site.install({"lost": value}, {"fake_pigeon": GOOD})
    with pytest.raises(ConfigError, match=rf"^channel plugin 'lost' \({value}\) failed to load: "):
        load_channel_plugins(group=GROUP)
    with pytest.raises(ConfigError, match=reason):
        load_channel_plugins(group=GROUP)


def test_an_entry_point_that_is_not_a_channel_plugin(site: FakeSite) -> None:
    site.install(
        {"wrong": "fake_wrong:plugin"},
        {"fake_wrong": 'plugin = {"name": "wrong", "factory": None}\n'},
    )
    with pytest.raises(ConfigError) as caught:
        load_channel_plugins(group=GROUP)
    assert str(caught.value) == (
        "channel plugin 'wrong' (fake_wrong:plugin) is a dict, not a ChannelPlugin"
    )
