"""Channel plugins from entry points: the installed ones, and fake distributions that go wrong.

A fake distribution is a ``*.dist-info`` directory (METADATA and
entry_points.txt) and its modules, written under a temporary directory put
on ``sys.path`` for one test; its entry points live in a group of their own,
so the installed channels never see them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from channels.direct import DirectChannel
from channels.whatsapp.channel import WhatsAppChannel
from harness.channel import ChannelSetup, UserSpec
from harness.exceptions import ConfigError
from harness.plugins import (
    ENTRY_POINT_GROUP,
    ChannelPlugin,
    _declared_entry_points,
    _scan,
    load_channel_plugins,
)

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


def _as_importlib_reads(group: str) -> list[tuple[str, str]]:
    return [(ep.name, ep.value) for ep in importlib.metadata.entry_points(group=group)]


def _distribution(root: Path, folder: str, entry_points: str) -> None:
    info = root / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: x\nVersion: 1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


@pytest.mark.parametrize("group", [ENTRY_POINT_GROUP, GROUP, "console_scripts", "pytest11"])
def test_the_path_is_read_as_importlib_metadata_reads_it(
    site: FakeSite, tmp_path: Path, group: str
) -> None:
    _distribution(
        site.root,
        "Fake.Dist-1.0.dist-info",
        f"# a comment\n\n[console_scripts]\nfake = fake_cli:main\n\n[ {GROUP} ]\n"
        f"first = fake_first:plugin\n[{GROUP}]\nsecond=fake_second : plugin [extra]\n",
    )
    _distribution(site.root, "old_style.egg-info", f"[{GROUP}]\nold = fake_old:plugin\n")
    (site.root / "no_entry_points-2.dist-info").mkdir()
    # "[ group ]" names another section; the same distribution further down the path
    # is hidden by the first one.
    later = tmp_path / "later"
    _distribution(later, "fake_dist-0.9.dist-info", f"[{GROUP}]\nhidden = fake_hidden:plugin\n")
    _distribution(later, "another-3.dist-info", f"[{GROUP}]\nthird = fake_third:plugin\n")
    sys.path.append(str(later))
    try:
        importlib.invalidate_caches()
        scanned = _scan(group)
        assert scanned is not None  # read without importlib.metadata
        assert sorted(scanned) == sorted(_as_importlib_reads(group))
        assert _declared_entry_points(group) == scanned
    finally:
        sys.path.remove(str(later))
    if group == GROUP:
        assert sorted(name for name, _ in scanned) == ["old", "second", "third"]


def test_a_zip_on_the_path_is_left_to_importlib_metadata(site: FakeSite, tmp_path: Path) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("zipped-1.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\n")
        zipped.writestr("zipped-1.dist-info/entry_points.txt", f"[{GROUP}]\nz = zipped_mod:p\n")
    sys.path.append(str(archive))
    try:
        importlib.invalidate_caches()
        assert _scan(GROUP) is None
        assert (
            _declared_entry_points(GROUP) == [("z", "zipped_mod:p")] == _as_importlib_reads(GROUP)
        )
    finally:
        sys.path.remove(str(archive))


def test_a_value_that_names_no_object_is_refused(site: FakeSite) -> None:
    site.install({"odd": "fake pigeon:plugin"}, {"fake_pigeon": GOOD})
    with pytest.raises(ConfigError, match=r"^channel plugin 'odd' \(fake pigeon:plugin\) failed"):
        load_channel_plugins(group=GROUP)
