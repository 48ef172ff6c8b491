"""Meta's rules on a load run's Graph API: the 24-hour window, the throughput and the pair rate.

They are the simulator's own classes (:class:`~channels.whatsapp.window.SessionWindows`,
:class:`~channels.whatsapp.limits.ThroughputLimiter` and
:class:`~channels.whatsapp.limits.PairRateLimiter`), on the real clock, which
is the one a load run lives on. Each user message opens or refreshes its
user's window (:meth:`MetaRules.opened`). Each message the agent sends passes,
in the simulator's order, the business number's throughput (130429), then the
pair rate to its user (131056), then the window (131047): over a limit it is
refused at once, with Meta's error body; a free-form message outside the
window fails the way the settings say (``window_error``): accepted, then a
``failed`` status (Meta's usual way), or refused at once. Templates may go
out of the window; read receipts and typing indicators meet no rule.
"""

from __future__ import annotations

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import GraphAPIError, ReEngagementRequired
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from channels.whatsapp.validation import ValidatedSend
from channels.whatsapp.window import SessionWindows
from harness.clock import Clock, SystemClock
from harness.store import MemoryStore

__all__ = ["MetaRules"]


class MetaRules:
    """The window and the send limits of one business number, as ``config`` sets them.

    ``config.window_seconds`` is the window's length (24 hours; a test makes
    it short), ``config.throughput_mps`` the throughput (80 a second) and
    ``config.rate_limits`` turns both limits on or off. ``clock`` is real
    time unless a test gives another.
    """

    def __init__(self, config: SimulatorConfig, clock: Clock | None = None) -> None:
        clock = SystemClock() if clock is None else clock
        self.config = config
        self.windows = SessionWindows(MemoryStore(clock=clock), clock, length=config.window_seconds)
        self.throughput = ThroughputLimiter(
            clock, mps=int(config.throughput_mps), enabled=config.rate_limits
        )
        self.pair_limit = PairRateLimiter(clock, enabled=config.rate_limits)

    async def opened(self, user: str) -> None:
        """``user`` wrote to the business now: their window is open for its length."""
        await self.windows.touch(user)

    async def check(self, send: ValidatedSend) -> GraphAPIError | None:
        """Raise Meta's error for a send refused at once; else the error it fails with later.

        ``None``: the message goes out. An error returned is the ``failed``
        status the send gets after it was accepted (131047 outside the window).
        """
        if send.action != "message":
            return None
        self.throughput.check(send.phone_number_id)
        user = send.user
        if user is None:  # a group: neither the pair rate nor a user's window applies
            return None
        self.pair_limit.check(user)
        if send.type == "template" or await self.windows.is_open(user):
            return None
        error = ReEngagementRequired()
        if self.config.window_error == "sync":
            raise error
        return error
