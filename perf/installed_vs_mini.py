"""mini-swe-agent through agentrig (``kind = "mini-swe-agent"``) next to mini-swe-agent's own Python API.

The same tasks, the same endpoint, the same mini config (its ``mini.yaml``), one trial per task each:

- **agentrig**: an experiment with the arm ``agent = { kind = "mini-swe-agent" }``, played by the
  runner's executor as ``agentrig run`` plays it: the real ``mini`` CLI from its cached tool root,
  run inside the task's bwrap sandbox, every model call through the trial's measuring proxy and the
  channel to the endpoint, then agentrig's verifier.
- **mini's Python API**: ``DefaultAgent(LitellmModel(...), env)`` with ``mini.yaml``'s agent, model
  and environment settings (the ``mini`` CLI's ``-l 0``: no cost limit) in mini's own venv (the
  anchors venv ``tests/anchors.py`` builds: mini-swe-agent 2.4.6), calling the endpoint directly
  (litellm, ``api_base`` and the key; the ``X-Agentrig-Task`` header the endpoint needs sent as
  ``model_kwargs.extra_headers``). mini's ``LocalEnvironment`` runs commands on the host, where a
  real task's tools are not (its Dockerfile installs them), so its environment here is
  ``LocalEnvironment`` with ``execute`` sending each command to agentrig's sandbox of the same task
  (as LocalEnvironment runs it: ``sh -c``, stdout and stderr together, the same timeout and env,
  the same ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` check), through a pipe to the trial's agent
  phase (``MiniApiAgent``, which this script puts in place of the arm's agent); then agentrig's
  verifier judges the sandbox as on the other side. So both sides differ only in where mini runs
  and how its calls reach the endpoint: in the sandbox through the proxy, or outside it directly.

Each side runs in a process of its own and plays one warm-up trial (the first task) before the
trials counted. Compared per task: the verdict (reward, termination), the model calls (the proxy's
record; mini's own count; the endpoint's count of chat requests during each side), the commands run
(equal lists?) and the wall time of the trial; per side, where the agent phase's time goes (to
mini's first reply — its start, litellm's import —, between the first and the last reply, from the
last to its exit) and the CPU per trial of everything the side started (a ``cpuacct`` cgroup of its
own, as ``terminal_vs_mini.py`` measures: the sandboxes, mini, its commands and the verifier
included). Then **the proxy's cost** in these trials, from agentrig's process CPU at concurrency 1
(nothing else runs in that process then; ``_instrument`` wraps the three methods): per call, the
proxy's request handler (``TrialProxy._call``) and within it the channel's call and the trial's
record (``TrialContext.complete``, what a built-in agent's call costs too) — the difference is the
proxy's own: reading the request, translating, answering (aiohttp's HTTP parsing before the handler
is not in it) —; per trial, the agent phase's CPU outside the calls (the proxy's start and close,
its socket in the sandbox, starting and waiting for the agent). And —
unless ``--proxy-calls 0`` — ``perf/proxy_overhead.py --calls N`` in the same session, which
separates the proxy's own CPU from the channel's (``ctx.complete`` alone) and measures the first-byte
latency it adds to a streamed answer (mini does not stream; Codex and Claude Code do). Goals of
issue 32: < 1 ms CPU and < 5 ms added first-byte latency per call.

    # built-in tasks:
    nice .venv/bin/python perf/installed_vs_mini.py [--concurrency 1] [--proxy-calls 500]
    # 10 real Terminal-Bench tasks (fetched at benchmark time, never committed: see
    # perf/terminal_coverage.py's docstring for `extract`):
    nice .venv/bin/python perf/installed_vs_mini.py --tasks /tmp/tb-tasks [--task-ids a,b,…]

With ``--tasks`` and no ``--task-ids``: the ten tasks of docs/terminal.md's podman acceptance run
(their builds need only the package registries; the oracle solves them on bwrap). Sandbox
settings as docs/terminal.md's coverage runs: bwrap, ``build_network = "host-settings"`` for real
tasks; ``output_limit`` raised so the sandbox passes mini the whole output, as LocalEnvironment
does. Needs root (bwrap), agentrig's mini tool root (``agentrig agents install mini-swe-agent``,
else installed on the first trial) and mini's venv (``--mini-python``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL_TASK_IDS = ["hello-world", "grid-pattern-transform", "openssl-selfsigned-cert", "sqlite-db-truncate",
                 "heterogeneous-dates", "fix-permissions", "organization-json-generator", "processing-pipeline",
                 "polyglot-c-py", "recover-obfuscated-files"]
KEY_ENV = "AGENTRIG_VS_MINI_KEY"
KEY = "sk-bench-installed-vs-mini"
MODEL = "solution"
OUTPUT_LIMIT = 1_000_000  # the sandbox's output bound, raised: mini gets every character, as from LocalEnvironment
COMMAND_CHARS = 2000  # commands compared on their first 2000 characters (as the trajectory's events keep them)
MINI_ENV = {"MSWEA_CONFIGURED": "true", "MSWEA_COST_TRACKING": "ignore_errors", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


# ------------------------------------------------------------------ mini's side, in mini's own venv

def mini_child() -> None:
    """One trial of mini's Python API (stdlib and minisweagent only: this runs under mini's Python).
    Reads the job as a JSON line on stdin; each command goes out as a JSON line on the original
    stdout and its result comes back on stdin; the end is a last JSON line."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # mini's and litellm's own printing goes to the log, not into the protocol
    job = json.loads(sys.stdin.readline())
    import logging

    import litellm
    import minisweagent
    import yaml
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.litellm_model import LitellmModel

    logging.disable(logging.WARNING)
    litellm.suppress_debug_info = True
    cfg = yaml.safe_load((Path(minisweagent.__file__).parent / "config" / "mini.yaml").read_text())

    class SandboxEnvironment(LocalEnvironment):
        """LocalEnvironment whose commands run in agentrig's sandbox of the trial's task."""

        def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict:
            command = action.get("command", "")
            proto.write(json.dumps({"command": command, "timeout": timeout or self.config.timeout,
                                    "env": self.config.env}) + "\n")
            output = json.loads(sys.stdin.readline())
            self._check_finished(output)
            return output

    model_cfg = {k: v for k, v in cfg["model"].items() if k != "model_kwargs"}
    model = LitellmModel(model_name=f"openai/{job['model']}", cost_tracking="ignore_errors", **model_cfg,
                         model_kwargs={**cfg["model"].get("model_kwargs", {}), "api_base": job["base_url"],
                                       "api_key": job["key"], "extra_headers": job["headers"]})
    env = SandboxEnvironment(**cfg["environment"])
    agent_cfg = {k: v for k, v in cfg["agent"].items() if k != "mode"}  # mode: the interactive agent's
    agent = DefaultAgent(model, env, **{**agent_cfg, "cost_limit": 0})  # the CLI's -l 0, as agentrig runs it
    cpu = time.process_time()
    info = agent.run(job["instruction"])
    proto.write(json.dumps({"end": info.get("exit_status"), "submission": info.get("submission") or "",
                            "calls": agent.n_calls, "cpu_s": time.process_time() - cpu}) + "\n")


class MiniApiAgent:
    """The agent phase of the mini side's trial: mini's Python API in its own venv (``mini_child``),
    each of its commands run in this trial's sandbox (``session.execute``: recorded as every
    command is). Put in place of the arm's agent by ``_mini_side``."""

    def __init__(self, session, mini_python: Path, base_url: str, ends: list) -> None:
        self.session, self.mini_python, self.base_url, self.ends = session, mini_python, base_url, ends

    async def run(self, session) -> None:
        import asyncio

        from agentrig.testing._scripted import header_form

        task = session.task
        home = Path(tempfile.mkdtemp(prefix="agentrig-vs-mini-home-"))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", KEY_ENV)}
        env.update(MINI_ENV, MSWEA_GLOBAL_CONFIG_DIR=str(home), HOME=str(home))
        log = open(home / "mini.log", "wb")  # noqa: SIM115 - closed below
        proc = await asyncio.create_subprocess_exec(str(self.mini_python), __file__, "--mini-child", cwd=str(home),
                                                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                    stderr=log, env=env)
        job = {"model": MODEL, "base_url": self.base_url, "key": KEY, "instruction": task.instruction,
               "headers": {"X-Agentrig-Task": header_form(task.id), "X-Agentrig-Role": "agent"}}
        commands: list[str] = []
        end: dict = {}
        started = time.perf_counter()
        marks: dict[str, float] = {}  # seconds into the phase: the first reply acted on, the last
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write((json.dumps(job) + "\n").encode())
            while True:
                line = await proc.stdout.readline()
                if not line:
                    break
                msg = json.loads(line)
                marks.setdefault("first", time.perf_counter() - started)
                marks["last"] = time.perf_counter() - started
                if "end" in msg:
                    end = msg
                    break
                commands.append(msg["command"])
                r = await session.execute(f"sh -c {shlex.quote(msg['command'])}", timeout_s=float(msg["timeout"]),
                                          env=msg["env"] or None)
                code = -1 if r.exit_code is None else r.exit_code
                out = {"output": r.output, "returncode": code, "exception_info": ""}
                if r.timed_out:  # as LocalEnvironment reports a command that outran its timeout
                    out["exception_info"] = (f"An error occurred while executing the command: Command "
                                             f"'{msg['command']}' timed out after {msg['timeout']} seconds")
                proc.stdin.write((json.dumps(out) + "\n").encode())
                await proc.stdin.drain()
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            log.close()
            tail = (home / "mini.log").read_text(errors="replace")[-1500:]
            self.ends.append({"task": task.id, "commands": commands, "calls": end.get("calls"),
                              "exit_status": end.get("end"), "mini_cpu_s": end.get("cpu_s"),
                              "agent_s": time.perf_counter() - started, "log_tail": "" if end else tail,
                              "first_reply_s": marks.get("first"), "last_reply_s": marks.get("last")})
            import shutil

            shutil.rmtree(home, ignore_errors=True)
        if end.get("end") == "Submitted":
            session.submit(end.get("submission", ""))


# ------------------------------------------------------------------ one side, in a process of its own

def _experiment(work: Path, base_url: str, tasks: Path | None, task_ids: list[str], kind: str,
                concurrency: int, name: str = "exp") -> Path:
    tasks_line = f'tasks = "{tasks}"\n' if tasks else ""
    build = '"host-settings"' if tasks else "true"
    path = work / f"{name}.toml"
    path.write_text(f'name = "installed-vs-mini"\n[benchmark]\nkind = "terminal"\n{tasks_line}'
                    f'task_ids = {json.dumps(task_ids)}\n'
                    f'[sandbox]\nkind = "bwrap"\nbuild_network = {build}\noutput_limit = {OUTPUT_LIMIT}\n'
                    f'[run]\ntrials = 1\nconcurrency = {concurrency}\ndir = "{work / name}"\n'
                    f'[channel]\nbase_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\nmodel = "{MODEL}"\n'
                    f'[[arms]]\nname = "{kind}"\nagent = {{ kind = "{kind}" }}\n')
    return path


def _warmup(work: Path, base_url: str, tasks: Path | None, task_id: str, kind: str) -> Path:
    """One trial of the first task played first and not counted: the side's imports, helpers
    (the sandbox's spawner, the warm verifier) and first-use costs are paid before the trials counted."""
    return _experiment(work, base_url, tasks, [task_id], kind, 1, name="warmup")


async def _play(path: Path, warmup: Path | None = None, *measured: list) -> tuple[list, int | None, float]:
    """The experiment's valid records, the endpoint's chat count when its counted trials start, and the
    CPU seconds the side spent on them (its cpuacct cgroup: every process it started, the sandboxes'
    too; else this process and its waited-for children)."""
    from terminal_vs_mini import _cpu_s

    from agentrig.run import experiment
    from agentrig.run.executor import Executor, close_channels, make_channels
    from agentrig.run.session import open_run, plan

    count = None
    if warmup is not None:
        await _play(warmup)
        for log in measured:
            log.clear()
        count = _chat_count(ARGS.base_url)
    cpu = _cpu_s()
    r = experiment.load(path)  # selects the tasks and builds their layers (cached)
    run = open_run(r)
    channels = make_channels(r, run.run_id)
    try:
        await Executor(r, run.store, run.run_id, channels).run(plan(r, run.store))
        return list(run.store.records(valid=True)), count, _cpu_s() - cpu
    finally:
        await close_channels(channels)
        run.close()


def _row(rec, commands: list[str], calls: int | None) -> dict:
    return {"task": rec.key.task_id, "reward": rec.verdict.reward, "termination": rec.verdict.termination,
            "calls": calls, "commands": [c[:COMMAND_CHARS] for c in commands], "trial_s": rec.duration_s}


def _instrument() -> tuple[list[dict], list[dict]]:
    """Record agentrig's process CPU (``time.process_time``: every thread) during each agent phase
    of an installed agent, during each call the proxy answers, and during the channel's part of it
    (``TrialContext.complete``: the call through the channel and its record, which a built-in agent
    pays too). Meaningful at concurrency 1, when nothing else runs in the process meanwhile."""
    from agentrig.agents.proxy import TrialProxy
    from agentrig.bench.terminal import installed
    from agentrig.trial.context import TrialContext

    phases: list[dict] = []
    calls: list[dict] = []
    complete_cpu = [0.0]
    run_until_ended, call, complete = installed.InstalledAgent._run_until_ended, TrialProxy._call, TrialContext.complete

    async def timed_phase(self, box, proxy, *rest):
        cpu, started, at = time.process_time(), time.perf_counter(), self.session.ctx.elapsed()
        try:
            return await run_until_ended(self, box, proxy, *rest)
        finally:
            phases.append({"task": self.session.task.id, "cpu_s": time.process_time() - cpu, "at": at,
                           "agent_s": time.perf_counter() - started, "calls": len(proxy.replies)})

    async def timed_call(self, request, wire):
        cpu, complete_cpu[0] = time.process_time(), 0.0
        try:
            return await call(self, request, wire)
        finally:
            calls.append({"task": self.ctx.key.task_id, "cpu_s": time.process_time() - cpu,
                          "complete_cpu_s": complete_cpu[0]})

    async def timed_complete(self, *a, **kw):
        cpu = time.process_time()
        try:
            return await complete(self, *a, **kw)
        finally:
            complete_cpu[0] += time.process_time() - cpu

    installed.InstalledAgent._run_until_ended = timed_phase
    TrialProxy._call = timed_call
    TrialContext.complete = timed_complete
    return phases, calls


def side(args) -> None:
    import asyncio

    import terminal_vs_mini

    os.environ[KEY_ENV] = KEY
    terminal_vs_mini._own_cpuacct()  # this side's processes, the sandboxes' included, in a cpuacct cgroup of its own
    cpu_method = "cpuacct cgroup" if terminal_vs_mini._CPUACCT is not None else "rusage"
    work = Path(tempfile.mkdtemp(prefix=f"agentrig-vs-mini-{args.side}-"))
    tasks = Path(args.tasks) if args.tasks else None
    ids = args.task_ids.split(",")
    if args.side == "agentrig":
        phases, calls = _instrument()
        exp = _experiment(work, args.base_url, tasks, ids, "mini-swe-agent", args.concurrency)
        recs, count, cpu = asyncio.run(_play(exp, _warmup(work, args.base_url, tasks, ids[0], "mini-swe-agent"),
                                             phases, calls))
        rows = []
        for rec in recs:
            cmds = [e.data.get("command", "") for e in rec.trajectory.events
                    if e.plugin == "sandbox" and e.kind == "command"]
            row = _row(rec, cmds, len(rec.trajectory.model_calls))
            phase = next((p for p in phases if p["task"] == rec.key.task_id), {})
            mine = [c for c in calls if c["task"] == rec.key.task_id]
            replies = [m.t - phase.get("at", 0.0) for m in rec.trajectory.messages if m.role == "assistant" and m.t]
            row.update(agent_s=phase.get("agent_s"), phase_cpu_s=phase.get("cpu_s"), phase_calls=phase.get("calls"),
                       first_reply_s=min(replies, default=None), last_reply_s=max(replies, default=None),
                       call_cpu_s=sum(c["cpu_s"] for c in mine), proxied=len(mine),
                       per_call=[[round(c["cpu_s"] * 1000, 3), round(c["complete_cpu_s"] * 1000, 3)] for c in mine])
            rows.append(row)
    else:
        from agentrig.bench.terminal import agents

        ends: list[dict] = []
        agents.build_terminal_agent = lambda settings, session: MiniApiAgent(session, Path(args.mini_python),
                                                                             args.base_url, ends)
        recs, count, cpu = asyncio.run(_play(_experiment(work, args.base_url, tasks, ids, "noop", args.concurrency),
                                 _warmup(work, args.base_url, tasks, ids[0], "noop"), ends))
        rows = []
        for rec in recs:
            end = next((e for e in ends if e["task"] == rec.key.task_id), {})
            row = _row(rec, end.get("commands", []), end.get("calls"))
            row.update(agent_s=end.get("agent_s"), exit_status=end.get("exit_status"),
                       first_reply_s=end.get("first_reply_s"), last_reply_s=end.get("last_reply_s"),
                       mini_cpu_s=end.get("mini_cpu_s"), log_tail=end.get("log_tail", ""))
            rows.append(row)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"rows": rows, "endpoint_count": count, "cpu_s": cpu, "cpu_method": cpu_method}))


# ------------------------------------------------------------------ driver

def _endpoint(tasks: Path | None) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", KEY_ENV]
    if tasks is not None:
        cmd += ["--tasks", str(tasks)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, KEY_ENV: KEY})
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _chat_count(base_url: str) -> int:
    import urllib.request

    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_fake/stats", timeout=10) as r:
        return int(json.load(r)["chat_count"])


def _measure(which: str, args, base_url: str) -> dict:
    from terminal_vs_mini import _remove_cgroup

    cmd = [sys.executable, __file__, "--side", which, "--base-url", base_url, "--task-ids", args.task_ids,
           "--concurrency", str(args.concurrency), "--mini-python", str(args.mini_python)]
    if args.tasks:
        cmd += ["--tasks", str(args.tasks)]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=7200)
    finally:  # the side's cpuacct cgroup (named by its pid), also when the side failed
        _remove_cgroup(Path("/sys/fs/cgroup/cpuacct") / f"agentrig-vs-mini-{proc.pid}")
    if proc.returncode != 0:
        raise SystemExit(f"the {which} side failed:\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["endpoint_calls"] = _chat_count(base_url) - result["endpoint_count"]
    result["wall_s"] = time.perf_counter() - started
    return result


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x * 1000:.2f}"


def report(a_side: dict, m_side: dict) -> dict:
    ours, theirs = a_side["rows"], m_side["rows"]
    counts, walls = (a_side["endpoint_calls"], m_side["endpoint_calls"]), (a_side["wall_s"], m_side["wall_s"])
    by = {r["task"]: r for r in theirs}
    same = same_cmds = 0
    head = (f"{'task':<28}{'agentrig':>10}{'mini API':>10}{'calls a/m':>11}{'commands a/m':>14}{'same cmds':>10}"
            f"{'trial s a/m':>15}")
    print(head + "\n" + "-" * len(head))
    for a in sorted(ours, key=lambda r: r["task"]):
        m = by.get(a["task"], {})
        eq = a["reward"] == m.get("reward")
        cmds_eq = a["commands"] == m.get("commands")
        same += eq
        same_cmds += cmds_eq
        print(f"{a['task']:<28}{a['reward']:>10g}{m.get('reward', float('nan')):>10g}"
              f"{a['calls']!s:>6}/{m.get('calls')!s:<4}{len(a['commands']):>8}/{len(m.get('commands', [])):<5}"
              f"{'yes' if cmds_eq else 'NO':>10}{a['trial_s']:>9.2f}/{m.get('trial_s', float('nan')):<6.2f}")
        for r, who in ((a, "agentrig"), (m, "mini API")):
            if r and r.get("reward") != 1:
                print(f"    {who}: {r.get('termination')} {r.get('exit_status') or ''} {r.get('log_tail', '')[-300:]}")
    n = len(ours)
    print(f"\nsame verdicts: {same} of {n}" + ("" if len(theirs) == n else f" (mini's side played {len(theirs)})"))
    print(f"same commands: {same_cmds} of {n}")
    calls_a = sum(r["calls"] or 0 for r in ours)
    calls_m = sum(r["calls"] or 0 for r in theirs)
    print(f"model calls: agentrig's record {calls_a}, endpoint {counts[0]} | "
          f"mini's own count {calls_m}, endpoint {counts[1]}")
    ta = [r["trial_s"] for r in ours]
    tm = [r["trial_s"] for r in theirs]
    print(f"wall time per trial (sandbox, agent, verifier): agentrig mean {statistics.mean(ta):.2f} s "
          f"(median {statistics.median(ta):.2f}) | mini API mean {statistics.mean(tm):.2f} s "
          f"(median {statistics.median(tm):.2f}); each side's whole run, its warm-up trial included: "
          f"{walls[0]:.1f} s / {walls[1]:.1f} s")
    aa = [r["agent_s"] for r in ours if r.get("agent_s")]
    am = [r["agent_s"] for r in theirs if r.get("agent_s")]
    if aa and am:
        print(f"agent phase per trial: agentrig (mini CLI in the sandbox, calls through the proxy) mean "
              f"{statistics.mean(aa):.2f} s | mini API (outside, calls direct) mean {statistics.mean(am):.2f} s")
        for who, rows in (("agentrig", ours), ("mini API", theirs)):
            timed = [r for r in rows if r.get("first_reply_s") is not None and r.get("agent_s")]
            if timed:
                between = statistics.mean(r["last_reply_s"] - r["first_reply_s"] for r in timed)
                print(f"  {who}: start to the first reply {statistics.mean(r['first_reply_s'] for r in timed):.2f} s, "
                      f"first to last reply {between:.2f} s, last reply to the agent's exit "
                      f"{statistics.mean(r['agent_s'] - r['last_reply_s'] for r in timed):.2f} s (means)")
    per = [c for r in ours for c in r["per_call"]]  # [handler ms, ctx.complete ms] per call
    n_calls = len(per)
    med = (statistics.median(c[0] for c in per), statistics.median(c[1] for c in per),
           statistics.median(c[0] - c[1] for c in per)) if per else (None, None, None)
    mean = (statistics.mean(c[0] for c in per), statistics.mean(c[1] for c in per),
            statistics.mean(c[0] - c[1] for c in per)) if per else (None, None, None)
    fixed = statistics.median(r["phase_cpu_s"] - r["call_cpu_s"] for r in ours) if ours else None
    mini_cpu = [r["mini_cpu_s"] / r["calls"] for r in theirs if r.get("mini_cpu_s") and r.get("calls")]
    print(f"CPU per trial, everything each side started (sandbox, mini, commands, verifier; "
          f"{a_side['cpu_method']}): agentrig {a_side['cpu_s'] / max(1, len(ours)):.2f} s | "
          f"mini API {m_side['cpu_s'] / max(1, len(theirs)):.2f} s")
    overlap = "" if ARGS.concurrency == 1 else ": trials overlap, not attributable"
    print(f"\nagentrig's process CPU (concurrency {ARGS.concurrency}{overlap}), "
          f"over {n_calls} calls the proxy answered:")
    for label, (h, c, o) in (("median", med), ("mean", mean)) if per else ():
        print(f"  {label} per call: the proxy's handler in all {h:.2f} ms; of it the channel's call and its record "
              f"(ctx.complete, as for a built-in agent's call) {c:.2f} ms; the proxy's own (reading the request, "
              f"translating, answering) {o:.2f} ms")
    if per and max(c[1] for c in per) > 5 * med[1]:
        print(f"  (the mean holds the largest, {max(c[1] for c in per):.1f} ms in ctx.complete: the counted run's "
              "first call, on a new channel whose client is made then)")
    print(f"  per trial, outside the calls (the proxy's start and close, its socket in the sandbox, starting "
          f"and waiting for the agent), median: {_ms(fixed)} ms")
    if mini_cpu:
        print(f"  beside it, mini's own process (the same on both sides): {statistics.mean(mini_cpu) * 1000:.1f} ms "
              "CPU per step (litellm, its templates, its loop)")
    return {"same_verdicts": same, "tasks": n, "same_commands": same_cmds, "calls": [calls_a, calls_m],
            "endpoint_calls": list(counts), "trial_s_mean": [statistics.mean(ta), statistics.mean(tm)],
            "cpu_s_per_trial": [a_side["cpu_s"] / max(1, len(ours)), m_side["cpu_s"] / max(1, len(theirs))],
            "median_ms_per_call": {"handler": med[0], "complete": med[1], "proxy_own": med[2]},
            "mean_ms_per_call": {"handler": mean[0], "complete": mean[1], "proxy_own": mean[2]},
            "per_trial_fixed_cpu_ms": None if fixed is None else fixed * 1000}


def _cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


ARGS = argparse.Namespace(concurrency=1)


def main() -> int:
    global ARGS
    if len(sys.argv) > 1 and sys.argv[1] == "--mini-child":
        mini_child()
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", help="a directory of real tasks (Terminal-Bench's tasks/, fetched); "
                                    "default: the built-in tasks")
    ap.add_argument("--task-ids", help="comma-separated task ids (default: with --tasks the ten of docs/terminal.md's "
                                       "podman acceptance run; else every built-in task)")
    ap.add_argument("--concurrency", type=int, default=1, help="trials at once on each side (the CPU per call needs 1)")
    ap.add_argument("--mini-python", type=Path, default=None,
                    help="Python of a venv with mini-swe-agent (default: tests/anchors.py's venv)")
    ap.add_argument("--proxy-calls", type=int, default=500, help="calls per row of perf/proxy_overhead.py "
                                                                 "run afterwards (0: not run)")
    ap.add_argument("--json", type=Path, help="write the rows and the summary here")
    ap.add_argument("--side", choices=["agentrig", "mini"], help=argparse.SUPPRESS)
    ap.add_argument("--base-url", help=argparse.SUPPRESS)
    args = ARGS = ap.parse_args()
    if args.side:
        side(args)
        return 0
    if os.geteuid() != 0:
        raise SystemExit("needs root: agentrig's bwrap sandbox")
    if args.mini_python is None:  # the anchors' venv (mini-swe-agent 2.4.6 among its pins; `make anchors` builds it)
        sys.path.insert(0, str(ROOT))
        from tests.anchors import VENV

        args.mini_python = VENV / "bin" / "python"
    if not args.mini_python.is_file():
        raise SystemExit(f"--mini-python {args.mini_python}: not found; build mini's venv (tests/anchors.py, or "
                         "`python -m venv V && V/bin/pip install mini-swe-agent==2.4.6`) and pass its bin/python")
    if args.tasks:
        args.tasks = Path(args.tasks).resolve()
        if not args.tasks.is_dir():
            raise SystemExit(f"--tasks {args.tasks}: not a directory of task directories")
    if args.task_ids is None:
        if args.tasks:
            args.task_ids = ",".join(REAL_TASK_IDS)
        else:
            from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_tasks

            args.task_ids = ",".join(t.id for t in load_tasks(builtin_tasks_dir())[0])
    version = subprocess.run([str(args.mini_python), "-c", "import importlib.metadata as m; "
                              "print(m.version('mini-swe-agent'))"], capture_output=True, text=True).stdout.strip()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores ({_cpu_name()}), Python {platform.python_version()}, "
          f"{platform.system()} {platform.release()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load average {os.getloadavg()[0]:.2f}; mini-swe-agent {version} ({args.mini_python})")
    ids = args.task_ids.split(",")
    print(f"{len(ids)} tasks ({args.tasks or 'built-in'}), 1 trial each per side (after one warm-up trial), "
          f"concurrency {args.concurrency}, bwrap\n")
    ep, url = _endpoint(args.tasks)
    try:
        a_side = _measure("agentrig", args, url)
        print(f"agentrig side done ({a_side['wall_s']:.0f} s, load {os.getloadavg()[0]:.2f})", flush=True)
        m_side = _measure("mini", args, url)
        print(f"mini API side done ({m_side['wall_s']:.0f} s, load {os.getloadavg()[0]:.2f})\n", flush=True)
    finally:
        ep.terminate()
        ep.wait()
    summary = report(a_side, m_side)
    if args.json:
        args.json.write_text(json.dumps({"agentrig": a_side, "mini": m_side, "summary": summary}, indent=1))
    if args.proxy_calls > 0:
        print(f"\nthe proxy alone: perf/proxy_overhead.py --calls {args.proxy_calls} "
              f"(load {os.getloadavg()[0]:.2f})", flush=True)
        subprocess.run([sys.executable, str(ROOT / "perf" / "proxy_overhead.py"),
                        "--calls", str(args.proxy_calls)], check=False)
    return 0 if summary["same_verdicts"] == summary["tasks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
