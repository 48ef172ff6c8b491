"""How a kind of trace event is filled in from trusted values, worked out once per call site.

``_Event.model_construct`` in :mod:`harness.trace` builds every event the
simulator records (a dozen a turn). Pydantic's own way looks each absent
field's default up again for every event; here the kind of event and the
names it is given, in the order given, pick a plan made on first use: which
fields come from the call, which take a default shared as it is, which a
fresh one from the field's factory, and the record of given names, shared by
every event given the same ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar, cast

from pydantic import BaseModel

__all__ = ["FIELDS_SETS", "built_by_plan"]

#: The set of given field names each event keeps, one per combination (events share them).
FIELDS_SETS: dict[frozenset[str], set[str]] = {}

_M = TypeVar("_M", bound=BaseModel)
_setattr = object.__setattr__
# Defaults of these types are shared as they are (pydantic copies none of them either).
_SHARED_DEFAULTS = (type(None), bool, int, float, str, bytes)
_UNPLANNED: Any = object()
_PLANS_KEPT = 1024


class _Plan(NamedTuple):
    """Per field in declared order: its name, whether it is given, else its default's maker."""

    steps: tuple[tuple[str, bool, Any, Callable[[], Any] | None], ...]
    given: set[str]


# Plans by kind of event and the names given, in the order given; None: pydantic's own way.
_PLANS: dict[tuple[type[BaseModel], tuple[str, ...]], _Plan | None] = {}


def built_by_plan(cls: type[_M], names: tuple[str, ...], values: Mapping[str, Any]) -> _M | None:
    """An event of kind ``cls`` (fields ``names``) from ``values``; None if no plan can do it.

    None when a default must be copied for each event or a factory reads the
    fields before it: the caller then builds the event pydantic's own way.
    """
    key = (cls, tuple(values))
    plan = _PLANS.get(key, _UNPLANNED)
    if plan is _UNPLANNED:
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        plan = _PLANS[key] = _plan(cls, names, key[1])
    if plan is None:
        return None
    event = cls.__new__(cls)
    for name, given, default, make in plan.steps:
        _setattr(event, name, values[name] if given else default if make is None else make())
    _setattr(event, "__pydantic_fields_set__", plan.given)
    _setattr(event, "__pydantic_extra__", None)
    _setattr(event, "__pydantic_private__", None)
    return event


def _plan(cls: type[BaseModel], names: tuple[str, ...], given: tuple[str, ...]) -> _Plan | None:
    steps: list[tuple[str, bool, Any, Callable[[], Any] | None]] = []
    for name in names:
        field = cls.__pydantic_fields__[name]
        if name in given:
            steps.append((name, True, None, None))
        elif field.is_required():
            continue
        elif field.default_factory is not None:
            if field.default_factory_takes_validated_data:
                return None  # it reads the fields before it
            steps.append((name, False, None, cast(Callable[[], Any], field.default_factory)))
        elif type(field.default) in _SHARED_DEFAULTS or field.default == ():
            steps.append((name, False, field.default, None))
        else:
            return None  # a default pydantic copies for each event
    fields_set = {name for name in given if name in names}
    return _Plan(tuple(steps), FIELDS_SETS.setdefault(frozenset(fields_set), fields_set))
