"""A Python agent's trials forked from the run's starter (agents/python_agent/host.py ``Starter``,
child/runner.py ``--starter``): the libraries the entry uses are imported once per run, each
trial is still a process of its own — its own pid and session, ``random`` seeded afresh, the
entry's module-level code run with the trial's own environment — and a starter that is gone, or
turned off (``AGENTRIG_PYTHON_AGENT_FORKS=0``), leaves the trials to start their own interpreter.

Real processes and real HTTP: the probe agent (tests/agents/python_agents/probe_agent.py) through
each trial's proxy and a real channel to the gold endpoint, the real τ² episode and judge."""

from __future__ import annotations

import asyncio
import json
import os
import signal

from agentrig.agents.python_agent.host import _starters

from .test_python_agent import alive, channel_to, events, gold, play, probe  # noqa: F401  (gold: the fixture)


def _process(record) -> dict:
    out = "".join(e.data["text"] for e in events(record, "output") if e.data["stream"] == "stdout")
    return json.loads(next(line for line in out.splitlines() if line.startswith("PROC "))[5:])


def _forked(record) -> bool:
    (start,) = events(record, "start")
    return start.data["forked"]


async def _trials(gold, n: int) -> list:  # noqa: F811
    channel = channel_to(gold.base_url)
    try:
        records = []
        for _ in range(n):
            _, record = await play(probe(report_process=True), channel)
            assert record.verdict.valid and record.verdict.reward == 1.0, record.verdict
            records.append(record)
        return records
    finally:
        await channel.aclose()


async def test_each_trial_is_a_process_of_its_own_forked_from_one_starter(gold, monkeypatch):  # noqa: F811
    monkeypatch.delenv("AGENTRIG_PYTHON_AGENT_FORKS", raising=False)
    records = await _trials(gold, 3)
    procs = [_process(r) for r in records]
    assert all(_forked(r) for r in records)
    starters = {p["ppid"] for p in procs}
    assert len(starters) == 1 and os.getpid() not in starters  # one starter, not this process
    assert len({p["pid"] for p in procs}) == 3
    assert len({p["random"] for p in procs}) == 3  # each trial's generator seeded afresh
    for p in procs:  # the entry imported anew in each trial, with that trial's own proxy
        assert p["imported_with"] == p["base_url"] and p["base_url"].startswith("http://127.0.0.1:")
    assert len({p["base_url"] for p in procs}) == 3
    for p in procs:
        assert not alive(p["pid"])  # each trial's process ended with its trial
    (starter,) = [s for s in _starters.values() if s.proc is not None and s.proc.pid in starters]
    assert starter.ok and alive(starter.proc.pid)
    starter.close()  # its end of the socket closed: the starter exits
    assert await asyncio.to_thread(starter.proc.wait, 30) == 0


async def test_a_starter_that_is_gone_is_replaced_and_no_trial_is_lost(gold, monkeypatch):  # noqa: F811
    monkeypatch.delenv("AGENTRIG_PYTHON_AGENT_FORKS", raising=False)
    (first,) = await _trials(gold, 1)
    killed = _process(first)["ppid"]
    os.kill(killed, signal.SIGKILL)
    for _ in range(300):
        if not alive(killed):
            break
        await asyncio.sleep(0.02)
    later = await _trials(gold, 2)  # the first may see the starter's death late and start its own interpreter
    assert _forked(later[-1]) and _process(later[-1])["ppid"] not in (killed, os.getpid())


async def test_with_forks_turned_off_each_trial_starts_its_interpreter(gold, monkeypatch):  # noqa: F811
    monkeypatch.setenv("AGENTRIG_PYTHON_AGENT_FORKS", "0")
    records = await _trials(gold, 2)
    assert not any(_forked(r) for r in records)
    assert all(_process(r)["ppid"] == os.getpid() for r in records)  # started by agentrig itself


async def test_a_starter_whose_imports_start_a_thread_declines_and_the_trials_start_afresh(gold, tmp_path, monkeypatch):  # noqa: F811
    """A library that starts a thread when imported (a fork would not have the thread): the starter
    says so and ends, and each trial starts its own interpreter — the start event says why. The
    library is installed in a venv of its own (its site-packages), which reaches agentrig's venv's
    packages (openai) through a .pth file; the agent's entry imports it."""
    import subprocess
    import sys
    import sysconfig

    monkeypatch.delenv("AGENTRIG_PYTHON_AGENT_FORKS", raising=False)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "agentrig_ours.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (site / "threadlib.py").write_text("import threading, time\n"
                                       "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n")
    mine = tmp_path / "agent"
    mine.mkdir()
    (mine / "thready_agent.py").write_text("import threadlib  # noqa: F401\nfrom probe_agent import make  # noqa: F401\n")
    agent = probe(report_process=True)
    agent = agent.model_copy(update={"entry": "thready_agent:make", "python": str(venv / "bin" / "python"),
                                     "path": [str(mine), *agent.path]})
    channel = channel_to(gold.base_url)
    try:
        records = [(await play(agent, channel))[1] for _ in range(2)]
    finally:
        await channel.aclose()
    for record in records:
        assert record.verdict.valid and record.verdict.reward == 1.0, record.verdict
        (start,) = events(record, "start")
        assert start.data["forked"] is False and start.data["not_forked"] == "an import started a thread"
        assert _process(record)["ppid"] == os.getpid()
