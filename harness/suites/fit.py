"""What of a scenario a channel can play, and what it skips (and says so).

A scenario written for WhatsApp may hold things another channel has no
notion of: Meta redelivering a webhook, a message's delivery status, a
template sent after the 24-hour window. A channel plugin lists what it can't
play (:attr:`~harness.plugins.ChannelPlugin.unsupported`); on that channel:

- a step of such a kind (``redeliver``) is skipped;
- an ``expect`` loses the expectations it can't check (``status``,
  ``template``) and checks the rest; with none left, it is skipped;
- an ``expect`` after a skipped user step is skipped too: what it would
  check never happened;
- a scenario tagged ``NAME-only``, where NAME is another installed channel,
  is skipped as a whole: its author said it is about that channel (the
  number of messages a long reply is split into, say, which no step shows).

Every skip is a :class:`~harness.results.Skip` in the scenario's result,
with its reason: reports show it, so nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from harness.results import Skip
from harness.suites.scenario import Scenario
from harness.suites.steps import BaseStep, ExpectStep, UserStep

__all__ = ["ONLY_SUFFIX", "ChannelFit", "only_channels"]

#: A tag that ends so (``whatsapp-only``) keeps a scenario to one channel.
ONLY_SUFFIX = "-only"


def only_channels(scenario: Scenario, channels: Collection[str]) -> set[str]:
    """The channels a scenario's ``NAME-only`` tags keep it to (empty: any channel)."""
    return {
        tag.removesuffix(ONLY_SUFFIX)
        for tag in scenario.tags
        if tag.endswith(ONLY_SUFFIX) and tag.removesuffix(ONLY_SUFFIX) in channels
    }


@dataclass
class ChannelFit:
    """One scenario's steps as one channel can play them, with what it skipped."""

    channel: str
    unsupported: Mapping[str, str]
    skipped: list[Skip] = field(default_factory=list)
    _last_user_step: BaseStep | None = None
    _last_user_step_skipped: bool = False

    def scenario_skip(self, scenario: Scenario, channels: Collection[str]) -> Skip | None:
        """Why the whole scenario is not played on this channel, or None when it is."""
        only = only_channels(scenario, channels)
        if not only or self.channel in only:
            return None
        tags = ", ".join(sorted(f"{name}{ONLY_SUFFIX}" for name in only))
        return Skip(
            what="scenario",
            reason=f"tagged {tags}, so not played on the {self.channel} channel",
        )

    def step(self, step: BaseStep) -> BaseStep | None:
        """The step as this channel plays it, or None when it is skipped (noted in ``skipped``)."""
        if isinstance(step, ExpectStep):
            return self._expect(step)
        reason = self.unsupported.get(step.action)
        if isinstance(step, UserStep):
            self._last_user_step = step
            self._last_user_step_skipped = reason is not None
        if reason is None:
            return step
        self._skip(step.action, reason, step)
        return None

    def _expect(self, step: ExpectStep) -> ExpectStep | None:
        if self._last_user_step_skipped and self._last_user_step is not None:
            before = self._last_user_step
            where = f" at line {before.line}" if before.line is not None else ""
            self._skip(
                "expect",
                f"it checks what followed the skipped {before.action} step{where}",
                step,
            )
            return None
        expect = step.expect
        kept: dict[str, object] = {}
        dropped = []
        for name in type(expect).model_fields:
            value = getattr(expect, name)
            if value is None:
                continue
            reason = self.unsupported.get(f"expect.{name}")
            if reason is None:
                kept[name] = value
            else:
                dropped.append((name, reason))
        for name, reason in dropped:
            self._skip(f"expect.{name}", reason, step)
        if not dropped:
            return step
        if not kept:
            return None
        cut = expect.model_copy(update={name: None for name, _ in dropped})
        return step.model_copy(update={"expect": cut})

    def _skip(self, what: str, reason: str, step: BaseStep) -> None:
        self.skipped.append(Skip(what=what, reason=reason, step=step.index, line=step.line))
