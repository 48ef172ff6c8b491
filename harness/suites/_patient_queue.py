"""saq's Redis queue, with a sweep that lets a worker finish taking a job.

A worker takes a job in two steps: it moves the job's id onto the list of
active jobs, then marks the job active. saq's sweep, which retries the
jobs of workers that stopped, took a job on that list not yet marked
active for a lost one, aborted it and queued it again, though its worker
was alive and played it: a worker that starts with jobs waiting sweeps and
takes at the same moment, and played its first job twice, every time.

This sweep does what saq's does (one sweeper at a time, under saq's own
lock key; a job whose record is gone leaves the lists; a lost job is
aborted, then queued again while it has attempts left), except that a job
found unmarked is lost only once it has stayed so for :data:`TAKING_GRACE`
seconds, as seen by any sweeper (the first sighting is kept in Redis).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Final

from saq.job import Status
from saq.queue.redis import RedisQueue

__all__ = ["TAKING_GRACE", "PatientQueue"]

#: Seconds a job may sit on the active list unmarked before a sweep takes it for lost.
TAKING_GRACE: Final = 2.0


class PatientQueue(RedisQueue):
    """A :class:`RedisQueue` whose sweep gives a job being taken time to be marked active."""

    async def sweep(self, lock: int = 60, abort: float = 5.0) -> list[str]:
        """Retry the jobs of workers that stopped; the ids of the jobs swept."""
        if not await self.redis.set(self.namespace("sweep"), 1, ex=lock, nx=True):
            return []  # another worker sweeps this round
        active = self.namespace("active")
        ids: list[Any] = await self.redis.lrange(active, 0, -1)
        records = await self.redis.mget(ids) if ids else []
        seen = await self._taking(ids, records)
        swept: list[str] = []
        for job_id, record in zip(ids, records, strict=True):
            name = _text(job_id)
            job = self.deserialize(record) if record is not None else None
            if job is None:  # its record expired: take it off the lists
                await self.redis.lrem(active, 0, job_id)
                await self.redis.zrem(self.namespace("incomplete"), job_id)
                swept.append(name)
                continue
            if job.status == Status.QUEUED:
                if time.time() - seen.get(name, time.time()) < TAKING_GRACE:
                    continue  # a worker is taking it
            elif job.status == Status.ACTIVE and not job.stuck:
                continue
            swept.append(name)
            await self.abort(job, error=self.swept_error_message)
            with contextlib.suppress(TimeoutError, RuntimeError):  # slow to answer, or gone
                await job.refresh(abort)
            if job.retryable:
                await self.retry(job, error=self.swept_error_message)
            else:
                await self.finish(job, Status.ABORTED, error=self.swept_error_message)
        return swept

    async def _taking(self, ids: list[Any], records: list[Any]) -> dict[str, float]:
        """When each job on the active list still unmarked was first seen so (Unix time)."""
        key = self.namespace("taking")
        unmarked = [
            _text(job_id)
            for job_id, record in zip(ids, records, strict=True)
            if record is not None
            and (job := self.deserialize(record)) is not None
            and job.status == Status.QUEUED
        ]
        known = {_text(k): float(v) for k, v in (await self.redis.hgetall(key)).items()}
        gone = [k for k in known if k not in unmarked]
        if gone:
            await self.redis.hdel(key, *gone)
        now = time.time()
        for name in unmarked:
            if name not in known:
                await self.redis.hsetnx(key, name, repr(now))
                known[name] = now
        return {name: known[name] for name in unmarked}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
