"""A gateway that serves both wires, as LiteLLM-style proxies do: the Anthropic Messages API at
``/v1/messages`` (answered here, minimal but shaped like Anthropic's) and everything else passed
through to a real fake endpoint. Real HTTP on 127.0.0.1; used by the Claude Code round trip."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from agentrig.testing.fake_endpoint import FakeEndpoint


class MessagesGateway:
    def __init__(self, api_key: str, models=("fake-model", "fake-model-mini")):
        self.api_key = api_key
        self.fake = FakeEndpoint(api_key=api_key, models=models)
        self.base_url = self.root_url = ""
        self.messages_calls = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> str:
        await self.fake.start()
        self._session = aiohttp.ClientSession()
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_route("*", "/{tail:.*}", self._pass)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.root_url = f"http://127.0.0.1:{port}"
        self.base_url = self.root_url + "/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()
        await self.fake.stop()

    async def _messages(self, request: web.Request) -> web.Response:
        self.messages_calls += 1
        sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if sent != self.api_key:
            return web.json_response({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
                                     status=401)
        body = await request.json()
        if body.get("model") not in self.fake.models:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": f"model: {body.get('model')}"}},
                                     status=404)
        return web.json_response({"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                                  "content": [{"type": "text", "text": "OK"}], "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 9, "output_tokens": 1}})

    async def _pass(self, request: web.Request) -> web.Response:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with self._session.request(request.method, self.fake.root_url + request.path_qs, headers=headers,
                                         data=await request.read()) as r:
            return web.Response(status=r.status, body=await r.read(), content_type=r.content_type)
