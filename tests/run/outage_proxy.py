"""A real HTTP hop in front of a local endpoint that a test can take down and bring back: while
``down``, every request is held ``hold_s`` (a gateway waiting on a dead upstream) and answered
503; otherwise it is forwarded as is. Every request is logged with its start, end and mode
(monotonic seconds of this process), so a test can see how many were in flight at once."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

import aiohttp
from aiohttp import web

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


@dataclass(frozen=True)
class Logged:
    start: float
    end: float
    down: bool


class OutageProxy:
    def __init__(self, upstream_base_url: str, hold_s: float = 0.3):
        root, _, _ = upstream_base_url.rstrip("/").rpartition("/v1")
        self.upstream = root
        self.hold_s = hold_s
        self.down = False
        self.log: list[Logged] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="outage-proxy", daemon=True)
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        self.base_url = f"http://127.0.0.1:{port}/v1"

    async def _start(self) -> int:
        self._session = aiohttp.ClientSession()
        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return self._runner.addresses[0][1]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        start, down = time.monotonic(), self.down
        try:
            body = await request.read()
            if down:
                await asyncio.sleep(self.hold_s)
                return web.json_response({"error": {"message": "upstream unavailable", "type": "server_error",
                                                    "code": None, "param": None}}, status=503)
            headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
            async with self._session.request(request.method, self.upstream + request.path_qs, data=body,
                                             headers=headers) as resp:
                data = await resp.read()
                ctype = resp.headers.get("Content-Type", "application/json")
                return web.Response(status=resp.status, body=data, headers={"Content-Type": ctype})
        finally:
            self.log.append(Logged(start, time.monotonic(), down))

    def stop(self) -> None:
        async def close() -> None:
            await self._runner.cleanup()
            await self._session.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def held_phase(log: list[Logged], quiet_s: float) -> list[Logged]:
    """The requests sent while the endpoint was down, from the first one that came after a quiet
    spell (no request in flight for ``quiet_s``): once every breaker held its calls, only probes."""
    down = sorted((x for x in log if x.down), key=lambda x: x.start)
    busy_until = None
    for i, x in enumerate(down):
        if busy_until is not None and x.start - busy_until >= quiet_s:
            return down[i:]
        busy_until = x.end if busy_until is None else max(busy_until, x.end)
    return []


def max_overlap(requests: list[Logged]) -> int:
    """The most requests of the list in flight at one moment."""
    edges = sorted([(x.start, 1) for x in requests] + [(x.end, -1) for x in requests], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak
