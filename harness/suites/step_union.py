"""Which model a step mapping is: the action key picks it, so a bad step fails with one message.

Every action a scenario may take is listed here with its model: the scripted
ones of :mod:`harness.suites.steps` (faults included) and the ``simulate`` stretch of
:mod:`harness.suites.simulate_step`. A mapping with no action, or with two,
is refused here with one clear line, rather than one error per model.
"""

from __future__ import annotations

from typing import Annotated, Final, TypeAlias

from pydantic import BeforeValidator, Discriminator, Tag

from harness.suites.simulate_step import SimulateStep
from harness.suites.steps import (
    BaseStep,
    ExpectStep,
    FaultsStep,
    RedeliverStep,
    SayStep,
    SendStep,
    TapStep,
    WaitStep,
)
from harness.suites.yamlpos import describe

__all__ = ["ACTIONS", "STEP_TAGS", "STEP_TYPES", "Step", "step_action"]

#: The keys that make a mapping a step, in the order error messages list them.
ACTIONS: Final = (
    "say",
    "tap",
    "send",
    "wait",
    "advance",
    "redeliver",
    "faults",
    "expect",
    "simulate",
)

#: The model of each action key.
STEP_TYPES: Final[dict[str, type[BaseStep]]] = {
    "say": SayStep,
    "tap": TapStep,
    "send": SendStep,
    "wait": WaitStep,
    "advance": WaitStep,
    "redeliver": RedeliverStep,
    "faults": FaultsStep,
    "expect": ExpectStep,
    "simulate": SimulateStep,
}
_STEP_KEYS: Final = frozenset(
    field.alias or name for cls in STEP_TYPES.values() for name, field in cls.model_fields.items()
)


def step_action(value: object) -> str | None:
    """The action key of a step mapping (the first one, if it has several), else ``None``."""
    if isinstance(value, BaseStep):
        return value.action
    if isinstance(value, dict):
        return next((key for key in ACTIONS if key in value), None)
    return None


def _step_tag(value: object) -> str | None:
    action = step_action(value)
    return None if action is None else STEP_TYPES[action].__name__


def _check_step(value: object) -> object:
    expected = ", ".join(ACTIONS)
    if isinstance(value, BaseStep):
        return value
    if not isinstance(value, dict):
        shown = f" ({value!r})" if isinstance(value, str) else ""
        raise ValueError(
            f"expected a step such as {{say: hi}}, got {describe(value)}{shown}; "
            f"a step is a mapping with one of: {expected}"
        )
    actions = [key for key in value if key in ACTIONS]
    if len(actions) > 1:
        raise ValueError(f"a step takes one action, this one has '{actions[0]}' and '{actions[1]}'")
    if not actions:
        unknown = [key for key in value if key not in _STEP_KEYS]
        if unknown:
            raise ValueError(f"unknown step '{unknown[0]}' (expected one of: {expected})")
        raise ValueError(f"a step needs an action (one of: {expected})")
    return value


#: One step of a scenario, told apart by its action key.
Step: TypeAlias = Annotated[
    Annotated[SayStep, Tag("SayStep")]
    | Annotated[TapStep, Tag("TapStep")]
    | Annotated[SendStep, Tag("SendStep")]
    | Annotated[WaitStep, Tag("WaitStep")]
    | Annotated[RedeliverStep, Tag("RedeliverStep")]
    | Annotated[FaultsStep, Tag("FaultsStep")]
    | Annotated[ExpectStep, Tag("ExpectStep")]
    | Annotated[SimulateStep, Tag("SimulateStep")],
    Discriminator(_step_tag),
    BeforeValidator(_check_step),
]
#: The tags :data:`Step` puts in validation error locations, one per step model.
STEP_TAGS: Final = frozenset(cls.__name__ for cls in STEP_TYPES.values())
