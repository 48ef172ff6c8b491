"""The channel's real faults, as a seeded, deterministic profile.

Meta redelivers webhooks, batches them, delivers them out of order and late,
and users type one thought in three quick messages. A :class:`FaultProfile`
says how often each happens; :class:`FaultDice` rolls for each decision from
its own seeded stream, so the same seed and the same conversation always
draw the same faults, and turning one fault up does not reshuffle the others.
"""

from __future__ import annotations

import difflib
import json
import random
from collections.abc import Collection, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.exceptions import ConfigError, ScenarioError
from harness.suites.yamlpos import LocatedError, read_yaml

__all__ = ["PRESETS", "FaultDice", "FaultProfile", "check_scenario_faults", "split_fragments"]

_Probability = Field(default=0.0, ge=0.0, le=1.0)


def _yaml_value(text: str, part: str) -> object:
    """One ``key=value`` setting's value, read as the scenario files read it: ``0.5``, ``true``."""
    try:
        return read_yaml(text).data
    except ScenarioError:
        raise ConfigError(f"fault profile: {part!r}: the value is not valid YAML") from None


class FaultProfile(BaseModel):
    """How often each channel fault happens, and how large it is.

    Probabilities are per update (a message or a status); durations are
    seconds of virtual time. The default profile has no faults at all.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    #: An update is delivered a second time, with identical bytes and signature.
    duplicate: float = _Probability
    duplicate_delay: float = Field(default=5.0, ge=0.0)
    #: An update is held back so that later updates overtake it.
    reorder: float = _Probability
    reorder_window: float = Field(default=2.0, ge=0.0)
    #: Up to this many updates that are due together travel in one POST.
    batch: int = Field(default=1, ge=1, le=1000)
    batch_window: float = Field(default=1.0, ge=0.0)
    #: Seconds added before every delivery, plus up to ``jitter`` more at random.
    latency: float = Field(default=0.0, ge=0.0)
    jitter: float = Field(default=0.0, ge=0.0)
    #: Messages sent within one second carry the same ``timestamp``.
    same_second: bool = False
    #: A user's text is split into a burst of fragments ``fragment_gap`` apart.
    fragment: float = _Probability
    fragment_gap: float = Field(default=1.0, ge=0.0)
    #: The agent answers a POST 200, but Meta sees a 500 (a proxy's) and retries it.
    answer_lost: float = _Probability
    #: Seconds the in-process agent's clock runs ahead of the channel's (negative: behind).
    clock_skew: float = Field(default=0.0, ge=-86_400.0, le=86_400.0)
    #: A status webhook never comes.
    status_missing: float = _Probability
    #: A status webhook comes ``status_late_delay`` seconds late.
    status_late: float = _Probability
    status_late_delay: float = Field(default=60.0, ge=0.0)
    #: A message's statuses come newest first (read before delivered before sent).
    status_out_of_order: float = _Probability
    #: ``read`` comes without ``delivered`` (Meta: read implies delivered).
    skip_delivered: float = _Probability

    @property
    def is_clean(self) -> bool:
        """True when the profile injects no fault."""
        return self == FaultProfile(seed=self.seed)

    @classmethod
    def parse(cls, spec: str | Path | dict[str, Any] | None) -> FaultProfile:
        """Build a profile from a preset name, a JSON or YAML file, ``k=v,...`` or a mapping.

        YAML, a file's or each ``k=v`` value, is read as scenario files are
        (:func:`~harness.suites.yamlpos.read_yaml`: YAML 1.2, so ``010`` is ten
        and ``yes`` a string; duplicate keys refused). Errors are one line
        naming the source, the field and, in a YAML file, the line.
        """
        if spec is None or spec == "":
            return cls()
        if isinstance(spec, dict):
            if "preset" in spec:
                # A preset with some of its fields changed: {preset: flaky, duplicate: 0}.
                changed = dict(spec)
                name = changed.pop("preset")
                if name not in PRESETS:
                    names = ", ".join(sorted(PRESETS))
                    raise ConfigError(f"fault profile: unknown preset {name!r} ({names})")
                return cls._validated({**PRESETS[name].model_dump(), **changed}, "fault profile")
            return cls._validated(spec, "fault profile")
        text = str(spec)
        if text in PRESETS:
            return PRESETS[text]
        path = Path(text)
        if path.suffix.lower() in {".json", ".yaml", ".yml"}:
            return cls._from_file(path)
        if "=" in text:
            fields: dict[str, Any] = {}
            for part in filter(None, (p.strip() for p in text.split(","))):
                key, sep, value = part.partition("=")
                if not sep or not key.strip():
                    raise ConfigError(f"fault profile: {part!r} is not key=value")
                fields[key.strip().replace("-", "_")] = _yaml_value(value.strip(), part)
            return cls._validated(fields, "fault profile")
        names = ", ".join(sorted(PRESETS))
        raise ConfigError(
            f"fault profile {text!r}: not a preset ({names}), a .json/.yaml file or key=value list"
        )

    @classmethod
    def _from_file(cls, path: Path) -> FaultProfile:
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: fault profile file not found") from None
        try:
            if path.suffix.lower() == ".json":
                data = json.loads(raw)
            else:
                data = read_yaml(raw, path=path).data
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON: {exc}") from None
        except ScenarioError as exc:  # already one line naming the file and the line
            raise ConfigError(str(exc)) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a fault profile must be a mapping")
        return cls._validated(data, str(path))

    @classmethod
    def _validated(cls, data: dict[str, Any], source: str) -> FaultProfile:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            raise ConfigError(f"{source}: field {where}: {first['msg']}") from None


#: Named profiles for the command line and scenario files.
PRESETS: dict[str, FaultProfile] = {
    "none": FaultProfile(),
    "duplicates": FaultProfile(duplicate=1.0),
    "flaky": FaultProfile(
        duplicate=0.2,
        reorder=0.2,
        latency=0.5,
        jitter=1.5,
        status_late=0.2,
        status_out_of_order=0.1,
        skip_delivered=0.2,
    ),
    "batched": FaultProfile(batch=10, batch_window=2.0),
    "bursty": FaultProfile(fragment=1.0, fragment_gap=1.0, same_second=True),
}


def check_scenario_faults(spec: object) -> None:
    """Check a scenario's ``faults:`` as the channel will read it, before anything runs.

    Raises :class:`~harness.suites.yamlpos.LocatedError` whose ``loc`` names
    the setting at fault (``("duplicat",)``), so the error names its line.
    """
    files = (".json", ".yaml", ".yml")
    if (
        isinstance(spec, str)
        and spec not in PRESETS
        and "=" not in spec
        and Path(spec).suffix.lower() not in files
    ):
        presets = ", ".join(sorted(PRESETS))
        raise LocatedError(f"unknown preset {spec!r}{_close(spec, PRESETS)}; presets: {presets}")
    if spec is None or isinstance(spec, str):
        try:
            FaultProfile.parse(spec)
        except ConfigError as exc:
            raise LocatedError(str(exc).removeprefix("fault profile ")) from None
        return
    if not isinstance(spec, Mapping):
        raise LocatedError("expected a preset name or a mapping of fault settings")
    settings = dict(spec)
    base = FaultProfile()
    if "preset" in settings:
        name = settings.pop("preset")
        if not isinstance(name, str) or name not in PRESETS:
            raise LocatedError(f"unknown preset {name!r}{_close(name, PRESETS)}", ("preset",))
        base = PRESETS[name]
    known = [key for key in FaultProfile.model_fields if key != "seed"]
    for key in settings:
        if key == "seed":
            raise LocatedError(
                "faults are seeded by the scenario's seed: set it at the top", (key,)
            )
        if key not in known:
            message = f"unknown fault setting{_close(key, known)}; settings: {', '.join(known)}"
            raise LocatedError(message, (key,))
    try:
        FaultProfile.model_validate({**base.model_dump(), **settings})
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        message = str(first["msg"])
        raise LocatedError(message[:1].lower() + message[1:], tuple(first["loc"])) from None


def _close(name: object, known: Collection[str]) -> str:
    close = difflib.get_close_matches(str(name), list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class FaultDice:
    """Seeded decisions for one profile; each kind of fault has its own stream."""

    def __init__(self, profile: FaultProfile) -> None:
        self.profile = profile
        self._streams: dict[str, random.Random] = {}

    def _rng(self, name: str) -> random.Random:
        rng = self._streams.get(name)
        if rng is None:
            rng = self._streams[name] = random.Random(f"{self.profile.seed}:{name}")
        return rng

    def roll(self, name: str, probability: float) -> bool:
        """True with the given probability, from the named stream (no draw at 0 or 1)."""
        if probability <= 0.0:
            return False
        if probability >= 1.0:
            return True
        return self._rng(name).random() < probability

    def uniform(self, name: str, high: float) -> float:
        """A number in ``[0, high)`` from the named stream (0 when ``high`` is 0)."""
        return 0.0 if high <= 0 else self._rng(name).uniform(0.0, high)

    def choice(self, name: str, count: int) -> int:
        """An index in ``range(count)`` from the named stream."""
        return 0 if count <= 1 else self._rng(name).randrange(count)

    def delivery_delay(self) -> float:
        """Latency before one delivery: the fixed part plus jitter."""
        return self.profile.latency + self.uniform("jitter", self.profile.jitter)


def split_fragments(text: str, dice: FaultDice) -> list[str]:
    """Split a text at word boundaries into the two or three messages a hasty user sends."""
    words = text.split()
    if len(words) < 2:
        return [text]
    parts = min(len(words), 2 + dice.choice("fragment-count", 2))
    cuts = sorted({1 + dice.choice("fragment-cut", len(words) - 1) for _ in range(parts - 1)})
    bounds = [0, *cuts, len(words)]
    return [" ".join(words[a:b]) for a, b in pairwise(bounds) if a < b]
