"""A small Chrome DevTools Protocol client for the report tests: Debian's chromium, headless, driven
over its websocket with aiohttp. Collects console errors and uncaught exceptions.

    async with Browser.launch(tmp_path) as b:
        page = await b.page()
        await page.goto(url)
        value = await page.eval("document.title")
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM_NAMES = ("chromium", "chromium-browser")


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    pass


class Page:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self._id = 0
        self._waiting: dict[int, asyncio.Future] = {}
        self.events: list[dict] = []
        self.errors: list[str] = []  # console errors, uncaught exceptions, error log entries
        self.requests: list[str] = []  # every URL the page asked for
        self._loaded = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if "id" in data:
                fut = self._waiting.pop(data["id"], None)
                if fut is not None and not fut.done():
                    if "error" in data:
                        fut.set_exception(CDPError(str(data["error"])))
                    else:
                        fut.set_result(data.get("result", {}))
                continue
            method, params = data.get("method"), data.get("params", {})
            self.events.append(data)
            if method == "Network.requestWillBeSent":
                self.requests.append(params.get("request", {}).get("url", ""))
            elif method == "Page.loadEventFired":
                self._loaded.set()
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                self.errors.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                d = params.get("exceptionDetails", {})
                self.errors.append("exception: " + str(d.get("exception", {}).get("description") or d.get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                e = params["entry"]
                self.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")

    async def send(self, method: str, **params: Any) -> dict:
        self._id += 1
        fut = asyncio.get_running_loop().create_future()
        self._waiting[self._id] = fut
        await self.ws.send_str(json.dumps({"id": self._id, "method": method, "params": params}))
        return await asyncio.wait_for(fut, 60)

    async def enable(self) -> None:
        for domain in ("Page", "Runtime", "Log", "Network"):
            await self.send(f"{domain}.enable")

    async def goto(self, url: str, timeout: float = 60) -> None:
        self._loaded.clear()
        result = await self.send("Page.navigate", url=url)
        if result.get("errorText"):
            raise CDPError(f"navigation to {url} failed: {result['errorText']}")
        await asyncio.wait_for(self._loaded.wait(), timeout)

    async def eval(self, expression: str) -> Any:
        r = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise CDPError(f"evaluating {expression[:80]!r}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    async def click_at(self, x: float, y: float) -> None:
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                            clickCount=0 if kind == "mouseMoved" else 1)

    async def screenshot(self) -> bytes:
        r = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(r["data"])

    async def close(self) -> None:
        self._reader.cancel()
        await self.ws.close()


class Browser:
    def __init__(self, proc: subprocess.Popen, port: int, session: aiohttp.ClientSession):
        self.proc, self.port, self.session = proc, port, session
        self.pages: list[Page] = []

    @classmethod
    async def launch(cls, profile: Path, binary: str | None = None) -> "Browser":
        binary = binary or find_chromium()
        if binary is None:
            raise CDPError("chromium not found")
        profile.mkdir(parents=True, exist_ok=True)
        (profile / "DevToolsActivePort").unlink(missing_ok=True)  # a stale one names a dead port
        args = [binary, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage",
                "--window-size=1280,900", "about:blank"]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        port = await asyncio.get_running_loop().run_in_executor(None, _read_port, proc, profile)
        session = aiohttp.ClientSession()
        return cls(proc, port, session)

    async def page(self) -> Page:
        async with self.session.get(f"http://127.0.0.1:{self.port}/json/list") as r:
            targets = await r.json(content_type=None)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            async with self.session.put(f"http://127.0.0.1:{self.port}/json/new?about:blank") as r:
                pages = [await r.json(content_type=None)]
        ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        page = Page(ws)
        await page.enable()
        self.pages.append(page)
        return page

    async def close(self) -> None:
        for p in self.pages:
            await p.close()
        await self.session.close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)  # our own process group only
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if self.proc.stderr:
            self.proc.stderr.close()

    async def __aenter__(self) -> "Browser":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _read_port(proc: subprocess.Popen, profile: Path, timeout: float = 60) -> int:
    """The DevTools port: from the 'DevTools listening on ws://…:PORT/' line on stderr, or the
    DevToolsActivePort file in the profile."""
    import select
    import time

    deadline = time.monotonic() + timeout
    seen = []
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        active = profile / "DevToolsActivePort"
        if active.is_file():
            first = active.read_text().splitlines()[:1]
            if first and first[0].strip().isdigit():
                return int(first[0])
        if proc.poll() is not None:
            raise CDPError(f"chromium exited with {proc.returncode}: {b''.join(seen).decode(errors='replace')[-2000:]}")
        ready, _, _ = select.select([proc.stderr], [], [], 0.2)
        if ready:
            line = proc.stderr.readline()
            seen.append(line)
            m = re.search(rb"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                return int(m.group(1))
    raise CDPError("chromium did not report its DevTools port in time")


# -- a tiny PNG decoder (8-bit RGB / RGBA, non-interlaced: what Chromium writes) ------------------

def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """(width, height, channels, rows of raw pixel bytes)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, [], 0
    height = depth = ctype = interlace = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
    ch = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * ch
    rows: list[bytes] = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(ch, stride):
                line[x] = (line[x] + line[x - ch]) & 0xFF
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 0xFF
        elif f == 3:
            for x in range(stride):
                left = line[x - ch] if x >= ch else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 0xFF
        elif f == 4:
            for x in range(stride):
                a = line[x - ch] if x >= ch else 0
                b = prev[x]
                c = prev[x - ch] if x >= ch else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        elif f != 0:
            raise ValueError(f"bad PNG filter {f}")
        rows.append(bytes(line))
        prev = line
    return width, height, ch, rows
