"""TrialToolServer (agents/mcp/): one trial's tools over MCP, reached with the real ``mcp`` client
SDK — its streamable-HTTP client, and its stdio client spawning the real bridge process — and with
plain HTTP and raw JSON-RPC lines where the SDK would not send what is tested (a wrong token,
arguments that are not an object)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agentrig.agents.mcp import McpTool, ToolResult, TrialToolServer

ECHO = McpTool("echo", "Says back what it is given.",
               {"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}},
                "required": ["text"]})
COUNT = McpTool("count", "Counts one more.", {"type": "object", "properties": {}})
HANG_GUARD_S = 60


class Tools:
    """A small stateful 'environment': echo, count, and an error for anything else."""

    def __init__(self):
        self.seen: list[tuple] = []
        self.count = 0

    def __call__(self, name, arguments, call_id, arguments_error):
        self.seen.append((name, arguments, call_id, arguments_error))
        if arguments is None:
            return ToolResult(f"Error: arguments are not an object ({arguments_error})", True)
        if name == "echo":
            return ToolResult(str(arguments.get("text")))
        if name == "count":
            self.count += 1
            return ToolResult(str(self.count))
        return ToolResult(f"Error: Tool '{name}' not found.", True)


@pytest.fixture
async def served():
    tools = Tools()
    server = TrialToolServer([ECHO, COUNT], tools, name="test-tools", instructions="Follow the shop's policy.")
    await server.start()
    yield server, tools
    await server.close()


@asynccontextmanager
async def http_client(server: TrialToolServer, *, token: str | None = None, mode: str = "legacy"):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token or server.token}"}) as hc:
        async with Client(streamable_http_client(server.url, http_client=hc), mode=mode) as client:
            yield client


def stdio_params(server: TrialToolServer, **env_over) -> StdioServerParameters:
    cmd, env = server.stdio_command()
    return StdioServerParameters(command=cmd[0], args=cmd[1:], env={**env, **env_over})


def text_of(result) -> str:
    return "".join(c.text for c in result.content)


def port_of(url: str) -> int:
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def bridge_pids(token: str) -> list[int]:
    """Our processes whose environment carries this server's token: the bridges of that server."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if f"AGENTRIG_MCP_TOKEN={token}".encode() in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_lists_the_tools_gives_the_instructions_and_serves_calls_in_order(served, mode):
    server, tools = served
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
    async with asyncio.timeout(HANG_GUARD_S), http_client(server, mode=mode) as client:
        assert client.instructions == "Follow the shop's policy."
        listed = (await client.list_tools()).tools
        assert [(t.name, t.description, t.input_schema) for t in listed] == \
               [(t.name, t.description, t.input_schema) for t in (ECHO, COUNT)]
        first = await client.call_tool("echo", {"text": "hello"})
        assert text_of(first) == "hello" and not first.is_error
        assert text_of(await client.call_tool("count", {})) == "1"
        assert text_of(await client.call_tool("count")) == "2"  # no arguments at all: {}
    assert tools.count == 2
    assert [(c.name, c.arguments, c.call_id) for c in server.calls] == \
           [("echo", {"text": "hello"}, "mcp_1"), ("count", {}, "mcp_2"), ("count", {}, "mcp_3")]
    assert [s[2] for s in tools.seen] == ["mcp_1", "mcp_2", "mcp_3"]


async def test_errors_and_unknown_tools_reach_call_and_come_back_flagged(served):
    server, tools = served
    async with asyncio.timeout(HANG_GUARD_S), http_client(server) as client:
        result = await client.call_tool("no_such_tool", {"x": 1})
    assert result.is_error and text_of(result) == "Error: Tool 'no_such_tool' not found."
    assert tools.seen == [("no_such_tool", {"x": 1}, "mcp_1", "")]
    assert server.calls[0].result == ToolResult("Error: Tool 'no_such_tool' not found.", True)


async def test_an_async_call_is_awaited():
    async def call(name, arguments, call_id, arguments_error):
        await asyncio.sleep(0)
        return ToolResult(f"{name}:{arguments['text']}")

    server = TrialToolServer([ECHO], call)
    await server.start()
    try:
        async with asyncio.timeout(HANG_GUARD_S), http_client(server) as client:
            assert client.instructions is None  # no instructions given: none announced
            assert text_of(await client.call_tool("echo", {"text": "hi"})) == "echo:hi"
    finally:
        await server.close()


async def test_a_call_that_raises_is_kept_as_the_failure_and_answered_with_a_protocol_error():
    def call(name, arguments, call_id, arguments_error):
        raise KeyError("the environment broke")

    server = TrialToolServer([ECHO], call)
    await server.start()
    try:
        async with asyncio.timeout(HANG_GUARD_S), http_client(server) as client:
            with pytest.raises(Exception):
                await client.call_tool("echo", {"text": "hi"})
        assert isinstance(server.failure, KeyError) and server.calls == []
    finally:
        await server.close()


@pytest.mark.parametrize("header", [None, "Bearer agentrig-wrong", "Basic {token}", "{token}"])
async def test_a_request_without_the_token_gets_401(served, header):
    server, tools = served
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if header is not None:
        headers["Authorization"] = header.format(token=server.token)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    async with httpx.AsyncClient(timeout=HANG_GUARD_S) as hc:
        response = await hc.post(server.url, json=init, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert server.token not in response.text
        # the right token, in any case of the scheme, is let in
        ok = await hc.post(server.url, json=init, headers={**headers, "Authorization": f"bearer {server.token}"})
        assert ok.status_code == 200
    assert tools.seen == []


async def test_the_sdk_client_with_a_wrong_token_cannot_connect_and_calls_nothing(served):
    server, tools = served
    with pytest.raises(BaseException) as caught:
        async with asyncio.timeout(HANG_GUARD_S), http_client(server, token="agentrig-wrong"):
            pass
    assert not isinstance(caught.value, TimeoutError)
    async with asyncio.timeout(HANG_GUARD_S), http_client(server) as client:  # the server is unharmed
        assert text_of(await client.call_tool("count", {})) == "1"
    assert [s[0] for s in tools.seen] == ["count"]


async def test_stdio_bridge_serves_the_same_tools_and_ends_with_its_client(served):
    server, tools = served
    cmd, env = server.stdio_command()
    assert server.token not in " ".join(cmd) and env["AGENTRIG_MCP_TOKEN"] == server.token
    assert env["AGENTRIG_MCP_URL"] == server.url
    async with asyncio.timeout(HANG_GUARD_S):
        async with Client(stdio_params(server), mode="legacy") as client:
            assert client.instructions == "Follow the shop's policy."
            assert [t.name for t in (await client.list_tools()).tools] == ["echo", "count"]
            assert [p for p in bridge_pids(server.token)]  # the bridge runs, with the token in its env
            results = await asyncio.gather(*(client.call_tool("count", {}) for _ in range(3)))
            assert sorted(text_of(r) for r in results) == ["1", "2", "3"]
            bad = await client.call_tool("nope", {})
            assert bad.is_error and "not found" in text_of(bad)
        while bridge_pids(server.token):  # the client closed its stdin: the bridge is gone
            await asyncio.sleep(0.05)
    assert [c.name for c in server.calls] == ["count", "count", "count", "nope"]


async def test_stdio_bridge_in_auto_mode_negotiates_a_version_and_works(served):
    server, tools = served
    async with asyncio.timeout(HANG_GUARD_S), Client(stdio_params(server)) as client:
        assert client.instructions == "Follow the shop's policy."
        assert text_of(await client.call_tool("echo", {"text": "over stdio"})) == "over stdio"


async def _bridge(server: TrialToolServer, **env_over):
    cmd, env = server.stdio_command()
    return await asyncio.create_subprocess_exec(
        *cmd, env={"PATH": os.environ.get("PATH", ""), **env, **env_over},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _exchange(proc, message: dict) -> dict:
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    await proc.stdin.drain()
    if "id" not in message:
        return {}
    return json.loads(await proc.stdout.readline())


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}


async def test_arguments_that_are_not_an_object_reach_call_as_none_with_the_reason(served):
    server, tools = served
    proc = await _bridge(server)
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            init = await _exchange(proc, INIT)
            assert init["result"]["instructions"] == "Follow the shop's policy."
            await _exchange(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            answer = await _exchange(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                            "params": {"name": "echo", "arguments": "text=hello"}})
            assert answer["result"]["isError"] is True
            assert "not an object" in answer["result"]["content"][0]["text"]
            good = await _exchange(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                          "params": {"name": "echo", "arguments": {"text": "fine"}}})
            assert good["result"]["content"][0]["text"] == "fine" and not good["result"].get("isError")
            proc.stdin.close()
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    (name, arguments, _, reason), second = tools.seen
    assert name == "echo" and arguments is None and "string" in reason and "text=hello" in reason
    assert second[1] == {"text": "fine"} and second[3] == ""
    assert server.calls[0].arguments is None and server.calls[0].arguments_error == reason


async def test_the_bridge_answers_a_request_the_server_refuses_with_a_json_rpc_error(served):
    server, tools = served
    proc = await _bridge(server, AGENTRIG_MCP_TOKEN="agentrig-wrong")
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            answer = await _exchange(proc, INIT)
            assert answer["id"] == 0 and "401" in answer["error"]["message"]
            proc.stdin.close()
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_the_bridge_without_its_environment_says_what_is_missing():
    server = TrialToolServer([ECHO], Tools())
    await server.start()
    try:
        cmd, _ = server.stdio_command()
        proc = await asyncio.create_subprocess_exec(*cmd, env={"PATH": os.environ.get("PATH", "")},
                                                    stdin=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(proc.communicate(), HANG_GUARD_S)
        assert proc.returncode == 2 and b"AGENTRIG_MCP_URL" in err
    finally:
        await server.close()


async def test_close_frees_the_port_even_with_a_session_open_and_the_bridge_then_reports_it():
    tools = Tools()
    server = TrialToolServer([ECHO, COUNT], tools)
    url = await server.start()
    proc = await _bridge(server)
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}) as hc:
                client = Client(streamable_http_client(url, http_client=hc, terminate_on_close=False),
                                mode="legacy")
                await client.__aenter__()
                await client.call_tool("count", {})
                await server.close()  # the client's session (and its GET stream) still open
                with pytest.raises(ConnectionRefusedError):
                    socket.create_connection(("127.0.0.1", port_of(url)), timeout=5).close()
                await client.__aexit__(None, None, None)
            answer = await _exchange(proc, INIT)
            assert "cannot be reached" in answer["error"]["message"]
            proc.stdin.close()
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    await server.close()  # a second close is harmless


async def test_it_serves_on_a_listening_socket_it_is_given_and_closes_it():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    port = sock.getsockname()[1]
    server = TrialToolServer([COUNT], Tools())
    url = await server.start(sock)
    try:
        assert url == f"http://127.0.0.1:{port}/mcp"
        async with asyncio.timeout(HANG_GUARD_S), http_client(server) as client:
            assert text_of(await client.call_tool("count", {})) == "1"
    finally:
        await server.close()
    assert sock.fileno() == -1


async def test_close_finishes_even_when_the_closer_is_cancelled():
    server = TrialToolServer([COUNT], Tools())
    url = await server.start()
    closer = asyncio.ensure_future(server.close())
    await asyncio.sleep(0)
    closer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await closer
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port_of(url)), timeout=5).close()


async def test_stdio_command_before_start_is_refused():
    with pytest.raises(RuntimeError, match="start"):
        TrialToolServer([ECHO], Tools()).stdio_command()


async def test_a_call_cut_short_by_close_is_answered_by_the_bridge_with_an_error():
    started = asyncio.Event()

    async def call(name, arguments, call_id, arguments_error):
        started.set()
        await asyncio.Event().wait()  # never answers: the trial ends first

    server = TrialToolServer([ECHO], call)
    await server.start()
    proc = await _bridge(server)
    try:
        async with asyncio.timeout(HANG_GUARD_S):
            await _exchange(proc, INIT)
            await _exchange(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                         "params": {"name": "echo", "arguments": {"text": "x"}}}).encode() + b"\n")
            await started.wait()
            await server.close()
            answer = json.loads(await proc.stdout.readline())
            assert answer["id"] == 7 and "agentrig MCP bridge" in answer["error"]["message"]
            proc.stdin.close()
            assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await server.close()
    assert server.calls == []


async def test_the_bridge_runs_on_another_python_with_the_standard_library_only(served):
    server, tools = served
    other = shutil.which("python3", path="/usr/bin:/bin")
    if other is None:
        pytest.skip("no system python3")
    cmd, env = server.stdio_command(python=other)
    assert cmd[:2] == [other, "-I"]
    async with asyncio.timeout(HANG_GUARD_S):
        async with Client(StdioServerParameters(command=cmd[0], args=cmd[1:], env=env), mode="legacy") as client:
            assert text_of(await client.call_tool("echo", {"text": "elsewhere"})) == "elsewhere"


async def test_an_openai_agents_sdk_agents_mcp_servers_list_and_call_the_tools(served):
    """The Agents SDK's own MCP clients (streamable HTTP with the token header, and stdio) work."""
    sdk = pytest.importorskip("agents.mcp", reason="openai-agents is not installed")
    server, tools = served
    cmd, env = server.stdio_command()
    http = sdk.MCPServerStreamableHttp(params={"url": server.url, "headers": {"Authorization": f"Bearer {server.token}"}})
    stdio = sdk.MCPServerStdio(params={"command": cmd[0], "args": cmd[1:], "env": env})
    async with asyncio.timeout(HANG_GUARD_S):
        for expected, mcp_server in (("1", http), ("2", stdio)):
            async with mcp_server:
                assert [t.name for t in await mcp_server.list_tools()] == ["echo", "count"]
                assert text_of(await mcp_server.call_tool("count", {})) == expected
    assert tools.count == 2
