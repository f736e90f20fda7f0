"""AppWorld's tools over MCP (bench/appworld/mcp.py), in AppWorld's own engine (a real pooled worker,
the synthetic tasks), reached with the real ``mcp`` client SDK: a scripted "agent" runs a task's
ground-truth solution through ``execute`` and ends with ``complete_task``; AppWorld's own
``world.evaluate()`` passes it, and the trajectory holds the executions as the native mode records
them."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from agentrig.agents.base import AgentSettings
from agentrig.bench.appworld import synthetic
from agentrig.bench.appworld.data import load_task
from agentrig.bench.appworld.episode import AppWorldSession, SessionSettings
from agentrig.bench.appworld.mcp import appworld_tool_server
from agentrig.bench.appworld.pool import WorkerPool
from agentrig.benchmark import Limits
from agentrig.errors import AgentStop
from agentrig.trial.context import TrialContext
from agentrig.types import TrialKey

HANG_GUARD_S = 300


def _task_with_answer(root):
    """A synthetic task whose solution ends with complete_task(answer=…), and that answer."""
    meta = synthetic.load(root)
    for task_id, t in meta["tasks"].items():
        if t.get("answer") is not None:
            return task_id, t
    pytest.skip("no synthetic task with an answer")


def _context(root, task_id):
    task = load_task(root, task_id)
    ctx = TrialContext(key=TrialKey(arm="a", domain="appworld", task_id=task_id, trial=0), task=task, seed=1)
    return ctx, task


def _solution_without_completion(solution: str) -> str:
    lines = [line for line in solution.splitlines() if "complete_task" not in line]
    return "\n".join(lines)


@pytest.mark.parametrize("via_complete_tool", [True, False])
async def test_the_solution_over_mcp_completes_the_task_and_is_recorded(appworld_python, synthetic_root,
                                                                        via_complete_tool):
    task_id, meta = _task_with_answer(synthetic_root)
    pool = WorkerPool(appworld_python, synthetic_root, 1)
    ctx, task = _context(synthetic_root, task_id)
    limits = Limits(max_steps=10)
    async with asyncio.timeout(HANG_GUARD_S), pool.lease() as worker:
        await worker.call("open", task_id=task_id, exec_timeout_s=60, max_interactions=20, random_seed=100,
                          raise_on_failure=True, timeout_s=120)
        session = AppWorldSession(ctx, task, worker, SessionSettings(agent=AgentSettings(), limits=limits,
                                                                     execute_timeout_s=60, output_limit=20000))
        server = appworld_tool_server(session)
        await server.start()
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}) as hc:
                async with Client(streamable_http_client(server.url, http_client=hc), mode="legacy") as client:
                    assert "apis.supervisor.complete_task" in client.instructions
                    assert "Code executions: at most 10." in client.instructions
                    assert [t.name for t in (await client.list_tools()).tools] == ["execute", "complete_task"]
                    first = await client.call_tool("execute", {"code": "print(1 + 1)"})
                    assert first.content[0].text.strip() == "2" and not first.is_error
                    failed = await client.call_tool("execute", {"code": "raise ValueError('nope')"})
                    assert failed.is_error and "nope" in failed.content[0].text
                    unknown = await client.call_tool("run_shell", {"cmd": "ls"})
                    assert unknown.is_error and "execute" in unknown.content[0].text
                    if via_complete_tool:
                        await client.call_tool("execute", {"code": _solution_without_completion(meta["solution"])})
                        done = await client.call_tool("complete_task", {"answer": meta["answer"]})
                    else:
                        done = await client.call_tool("execute", {"code": meta["solution"]})
                    assert not done.is_error, done.content[0].text
                    assert session.completed
                    after = await client.call_tool("execute", {"code": "print(3)"})
                    assert after.is_error and "complete" in after.content[0].text
        finally:
            await server.close()
        result = await worker.call("evaluate", timeout_s=300)
    pool_workers = list(pool.all)
    for w in pool_workers:
        w.kill()
    assert result["success"], result
    msgs = ctx.trajectory.messages
    calls = [m.tool_calls[0] for m in msgs if m.role == "assistant"]
    assert all(c.name == "execute" for c in calls)
    # the unknown tool (mcp_3) and the call after completion (the last) ran nothing and are not actions
    served = [c.call_id for c in server.calls]
    assert [c.id for c in calls] == served[:2] + served[3:-1]
    assert calls[0].arguments == {"code": "print(1 + 1)"}
    if via_complete_tool:
        assert calls[-1].arguments["code"] == f"apis.supervisor.complete_task(answer={meta['answer']!r})"
    answers = [m for m in msgs if m.role == "tool"]
    assert [a.tool_call_id for a in answers] == [c.id for c in calls]
    assert [a.error for a in answers][:2] == [False, True]
    assert ctx.trajectory.counters["executions"] == len(calls)
    assert ctx.trajectory.counters["unknown_tools"] == 1


async def test_the_executions_limit_is_kept_as_the_servers_failure(appworld_python, synthetic_root):
    task_id, _ = _task_with_answer(synthetic_root)
    pool = WorkerPool(appworld_python, synthetic_root, 1)
    ctx, task = _context(synthetic_root, task_id)
    async with asyncio.timeout(HANG_GUARD_S), pool.lease() as worker:
        await worker.call("open", task_id=task_id, exec_timeout_s=60, max_interactions=5, random_seed=100,
                          raise_on_failure=True, timeout_s=120)
        session = AppWorldSession(ctx, task, worker, SessionSettings(agent=AgentSettings(), limits=Limits(max_steps=1),
                                                                     execute_timeout_s=60, output_limit=20000))
        server = appworld_tool_server(session)
        await server.start()
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}) as hc:
                async with Client(streamable_http_client(server.url, http_client=hc), mode="legacy") as client:
                    await client.call_tool("execute", {"code": "x = 1"})
                    with pytest.raises(Exception):
                        await client.call_tool("execute", {"code": "x = 2"})
        finally:
            await server.close()
    for w in list(pool.all):
        w.kill()
    assert isinstance(server.failure, AgentStop) and server.failure.termination == "limits_exceeded"
    last = ctx.trajectory.messages[-1]
    assert last.role == "tool" and last.error and "step limit" in last.content
