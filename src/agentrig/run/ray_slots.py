"""Endpoint bounds that hold across a Ray cluster: one ``EndpointSlots`` actor per endpoint.

A channel bounds the requests in flight to an endpoint (base URL + key) by ``max_concurrency``
with a semaphore of its process. On a cluster every worker has its own channel, so the driver
makes one slots actor per endpoint of the run and every worker's channel takes its slots from it
(``Channel(slots=…)``, the hook in channel/client.py): ten workers never send a gateway more
requests at once than one machine would.

Slots are held per *holder* (one token per worker incarnation): when a worker dies holding
slots, the driver gives them back with ``release_all(token)``.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter, deque
from typing import Any


class EndpointSlots:
    """The slots of one endpoint (a Ray async actor: every method runs on its event loop)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.free = limit
        self.waiters: deque[tuple[str, asyncio.Future]] = deque()
        self.held: Counter[str] = Counter()
        self.peak = 0
        self.granted = 0

    def _grant(self, holder: str) -> None:
        self.held[holder] += 1
        self.granted += 1
        self.peak = max(self.peak, self.limit - self.free)

    async def acquire(self, holder: str) -> None:
        if self.free > 0 and not self.waiters:
            self.free -= 1
            self._grant(holder)
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append((holder, fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted just before the cancellation: give it back
                self._give_back(holder, 1)
            else:
                self._drop_waiter(fut)
            raise

    def _drop_waiter(self, fut: asyncio.Future) -> None:
        self.waiters = deque(w for w in self.waiters if w[1] is not fut)

    def _give_back(self, holder: str, n: int) -> None:
        n = min(n, self.held[holder])
        self.held[holder] -= n
        if self.held[holder] <= 0:
            del self.held[holder]
        for _ in range(n):
            while self.waiters:  # hand the slot straight to the next waiter
                who, fut = self.waiters.popleft()
                if not fut.done():
                    self._grant(who)
                    fut.set_result(None)
                    break
            else:
                self.free += 1

    async def release(self, holder: str) -> None:
        self._give_back(holder, 1)

    async def release_all(self, holder: str) -> int:
        """Give back every slot a (lost) worker incarnation held; drop its waiting requests."""
        n = self.held.get(holder, 0)
        for who, fut in list(self.waiters):
            if who == holder and not fut.done():
                fut.cancel()
        self.waiters = deque(w for w in self.waiters if w[0] != holder)
        self._give_back(holder, n)
        return n

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "peak": self.peak, "in_use": self.limit - self.free,
                "waiting": len(self.waiters), "granted": self.granted}


class RaySlot:
    """What a worker's channel uses in place of an endpoint's semaphore: ``async with slot:``."""

    def __init__(self, handle: Any, holder: str):
        self.handle, self.holder = handle, holder

    async def __aenter__(self) -> None:
        await self.handle.acquire.remote(self.holder)

    async def __aexit__(self, *exc: object) -> None:
        self.handle.release.remote(self.holder)  # fire and forget: the actor runs calls in order


def endpoint_id(base_url: str, fingerprint: str) -> str:
    """A short name for an endpoint (its URL and key fingerprint, hashed): the slots table's key."""
    return hashlib.blake2b(f"{base_url}\x1f{fingerprint}".encode(), digest_size=8).hexdigest()


async def endpoint_limits(r: Any) -> dict[str, int]:
    """Every endpoint the run's arms call, with its bound, computed by the channel itself (the
    smallest ``max_concurrency`` of the roles that share it). An endpoint whose key is missing is
    left out: its first call fails on the worker as it would locally (KEY_MISSING)."""
    from agentrig.channel.client import Channel
    from agentrig.errors import AgentrigError

    out: dict[str, int] = {}
    endpoints: dict = {}
    channels = [Channel(arm.channel, endpoints=endpoints) for arm in r.arms]
    for arm, ch in zip(r.arms, channels):
        for role in arm.roles_needed:
            try:
                ep = ch.endpoint(ch.role(role))
            except AgentrigError:
                continue
            out[endpoint_id(ep.base_url, ep.fingerprint)] = ep.limit
    await channels[0].aclose()  # the endpoints dict is shared: this closes every client made here
    return out


def slots_hook(handles: dict[str, Any], holder: str):
    """The ``Channel(slots=…)`` hook of a worker: the endpoint's slots actor, or its own semaphore
    for an endpoint the driver did not know (a missing key: the call fails before it is sent)."""

    def hook(ep: Any) -> Any:
        handle = handles.get(endpoint_id(ep.base_url, ep.fingerprint))
        return RaySlot(handle, holder) if handle is not None else asyncio.Semaphore(ep.limit)

    return hook
