"""Installed agents' terminal run played the hard way: channel faults, and the endpoint down mid-run.

``play`` is the acceptance protocol of agents we did not write (issue 32): it starts the solution
endpoint (``solution_endpoint``, its own process, on a fixed port) answering a share of requests
with faults (429, 500, malformed bodies) and appending every request it answers to a log file
(``--log``: status, usage, fault, the X-Agentrig-* headers), runs ``agentrig run`` on an experiment
with one arm per agent (``mini-swe-agent``, ``codex``, ``claude-code``, a ``command`` agent), kills
the endpoint with SIGKILL once some trials are stored, keeps it down for ``outage_s`` seconds, then
starts it again on the same port (the same log) — and ``summarize`` reports, per arm, what the
store holds against what the endpoint's log says it served:

- every planned trial stored valid exactly once, and solved (reward 1, ``submitted``);
- the channel's retries for faults (``rate_limited``, ``server_error``, ``malformed``) equal to the
  faults the endpoint injected into that arm's requests (the outage's are counted apart);
- the calls recorded equal to the completions the endpoint answered, in count and in usage;
- no fault seen by the agent: its own record says it finished by itself (mini's ``Submitted``,
  Codex's ``turn.completed``, Claude Code's ``success``), no request of the agent repeats an
  earlier one (an agent that saw an error sends the same request again), no proxy failure, and
  the end of its log names no error or retry.

Used by ``tests/bench/terminal/test_installed_agents.py`` and ``perf/installed_agents.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentrig.testing.store_watch import valid_count

KEY_ENV = "AGENTRIG_INSTALLED_RUN_KEY"
KEY = "sk-installedrun-Tq3Mw8Zc5Hx1Nv6Rb"
FAULT_KINDS = "rate_limit,server_error,malformed"
FAULT_CAUSES = {"rate_limit": "rate_limited", "server_error": "server_error", "malformed": "malformed"}
AGENTS = ("mini-swe-agent", "codex", "claude-code")
# how each agent's own record says it finished by itself (records.py's exit_status)
FINISHED = {"mini-swe-agent": "Submitted", "codex": "completed", "claude-code": "success"}
# words in the end of an agent's log that would say it saw an error from its model endpoint
_SAW_ERROR = re.compile(r"retry|retrying|reconnecting|rate.?limit|internal server error|api error|\b(429|500|529)\b",
                        re.I)


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    return {**out, KEY_ENV: KEY, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Endpoint:
    """The solution endpoint as its own process on ``port``, appending every request to ``log``."""

    def __init__(self, port: int, log: Path, *, tasks: Path | None = None, fault_rate: float = 0.0,
                 seed: int = 0, extra: tuple[str, ...] = ()):
        args = [sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", KEY_ENV,
                "--port", str(port), "--log", str(log), "--seed", str(seed), *extra]
        if tasks is not None:
            args += ["--tasks", str(tasks)]
        if fault_rate:
            args += ["--fault-rate", str(fault_rate), "--fault-kinds", FAULT_KINDS]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            self.stop()
            raise RuntimeError(f"the solution endpoint did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")

    def kill(self) -> None:
        """A crash, not a clean stop."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def agent_table(kind: str) -> str:
    """The arm's ``agent`` inline table: an installed agent, or the example command agent (examples/)."""
    if kind == "command":
        example = Path(__file__).resolve().parents[5] / "examples" / "command_agent"
        return f'{{ kind = "command", run = "python3 {{tool}}/agent.py {{instruction}}", mount = "{example}" }}'
    return f'{{ kind = "{kind}" }}'


def experiment(workdir: Path, base_url: str, *, agents: tuple[str, ...] = AGENTS, tasks: Path | None = None,
               task_ids: list[str] | None = None, sandbox: str = "bwrap", trials: int = 1, concurrency: int = 2,
               outage_wait_s: float = 300, name: str = "installed", roles: str = "", cache_dir: Path | None = None,
               sandbox_extra: str = "") -> Path:
    """The experiment file: one arm per agent (named by its kind), the endpoint as the model
    (``cache_dir``: the sandbox's; None: agentrig's default cache, whose task layers earlier runs built)."""
    bench = [f'tasks = "{tasks}"'] if tasks else []
    if task_ids:
        bench.append(f"task_ids = {json.dumps(task_ids)}")
    cache_line = f'cache_dir = "{cache_dir}"' if cache_dir else ""
    arms = "".join(f'\n[[arms]]\nname = "{k}"\nagent = {agent_table(k)}\n' for k in agents)
    text = textwrap.dedent(f"""\
        name = "{name}"
        [benchmark]
        kind = "terminal"
        {chr(10).join(bench)}
        [sandbox]
        kind = "{sandbox}"
        {cache_line}
        {sandbox_extra}
        [run]
        dir = "{workdir / 'runs' / name}"
        seed = 32
        trials = {trials}
        concurrency = {concurrency}
        [channel]
        base_url = "{base_url}"
        api_key_env = "{KEY_ENV}"
        model = "solution"
        timeout_s = 60
        max_attempts = 12
        backoff_base_s = 0.01
        backoff_max_s = 0.2
        outage_wait_s = {outage_wait_s}
        """) + textwrap.dedent(roles) + arms
    path = workdir / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def play(workdir: Path, *, agents: tuple[str, ...] = AGENTS, sandbox: str = "bwrap", tasks: Path | None = None,
         task_ids: list[str] | None = None, trials: int = 1, concurrency: int = 2, fault_rate: float = 0.2,
         seed: int = 7, outage_s: float = 20.0, outage_after: int = 2, timeout_s: float = 7200,
         name: str = "installed", cache_dir: Path | None = None, sandbox_extra: str = "") -> dict[str, Any]:
    """Run the agents on the tasks with faults and (``outage_s`` > 0) the endpoint killed once
    ``outage_after`` valid trials are stored, restarted ``outage_s`` later; the summary."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), workdir / f"{name}-endpoint.jsonl"
    log.unlink(missing_ok=True)
    started = time.monotonic()
    endpoint = Endpoint(port, log, tasks=tasks, fault_rate=fault_rate, seed=seed)
    restarted: Endpoint | None = None
    outage: dict[str, Any] = {"planned_s": outage_s}
    try:
        toml = experiment(workdir, endpoint.base_url, agents=agents, tasks=tasks, task_ids=task_ids, sandbox=sandbox,
                          trials=trials, concurrency=concurrency, outage_wait_s=max(300.0, 10 * outage_s), name=name,
                          cache_dir=cache_dir, sandbox_extra=sandbox_extra)
        db = workdir / "runs" / name / "trials.sqlite"
        proc = subprocess.Popen([str(Path(sys.executable).with_name("agentrig")), "run", str(toml), "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        if outage_s > 0:
            deadline = time.monotonic() + timeout_s
            while valid_count(db) < outage_after and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            outage["valid_at_kill"] = valid_count(db)
            outage["run_alive_at_kill"] = proc.poll() is None
            endpoint.kill()
            down = time.monotonic()
            while time.monotonic() - down < outage_s and proc.poll() is None:
                time.sleep(0.2)
            outage["run_alive_at_restart"] = proc.poll() is None
            restarted = Endpoint(port, log, tasks=tasks, fault_rate=fault_rate, seed=seed + 1)
            outage["down_s"] = round(time.monotonic() - down, 1)
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        endpoint.stop()
        if restarted is not None:
            restarted.stop()
    report: dict[str, Any] = {"sandbox": sandbox, "agents": list(agents), "exit_code": proc.returncode,
                              "elapsed_s": round(time.monotonic() - started, 1), "outage": outage,
                              "stderr_tail": err[-3000:] if proc.returncode else ""}
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    report["status"] = doc.get("status")
    report["run_dir"] = doc.get("run_dir") or str(workdir / "runs" / name)
    report["outages"] = doc.get("outages") or []
    report["arms"] = summarize(Path(report["run_dir"]), log)
    report["log"] = str(log)
    return report


def read_log(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()] \
        if log.exists() else []


def _requests_resent(record: Any) -> int:
    """How many of the agent's requests repeat an earlier one of the same trial exactly (an agent
    that saw an error sends its request again)."""
    messages: list = []
    tools: Any = None
    seen, resent = set(), 0
    for r in record.trajectory.agent_requests:
        messages = messages[:r.keep] + list(r.tail)
        if not r.same_tools:
            tools = r.tools
        digest = hashlib.sha256(json.dumps([messages, tools], sort_keys=True).encode()).hexdigest()
        resent += digest in seen
        seen.add(digest)
    return resent


def agent_saw(record: Any, kind: str) -> list[str]:
    """What in a valid trial's record says the agent saw a fault (empty: nothing)."""
    found: list[str] = []
    events = record.trajectory.events
    if not any((e.plugin, e.kind) == ("agent", "start") for e in events):
        return found  # the agent never ran (its task could not be built): nothing to see
    if kind in FINISHED:
        rec = [e.data for e in events if (e.plugin, e.kind) == ("agent", "record")]
        if not rec or rec[-1].get("exit_status") != FINISHED[kind] or not rec[-1].get("finished"):
            found.append(f"its record does not say it finished by itself: {rec[-1] if rec else 'no record'}")
        elif rec[-1].get("errors"):  # the agent's own API-error / retry events (records.py)
            found.append(f"its record holds errors it saw: {rec[-1]['errors'][:3]}")
    if any(e.plugin == "proxy" and e.kind == "call_failed" for e in events):
        found.append("a proxy call failed")
    resent = _requests_resent(record)
    if resent:
        found.append(f"{resent} request(s) sent again")
    tail = next((e.data.get("log_tail") or "" for e in events if (e.plugin, e.kind) == ("agent", "exit")), "")
    hit = _SAW_ERROR.search(tail)
    if hit:
        found.append(f"its log says {tail[max(0, hit.start() - 80):hit.end() + 80]!r}")
    return found


def summarize(run_dir: Path, log: Path) -> dict[str, dict[str, Any]]:
    """Per arm: the store against the endpoint's log (see the module docstring)."""
    from agentrig.store.store import Store

    lines = [x for x in read_log(log) if (x.get("headers") or {}).get("x-agentrig-role") == "agent"]
    db = run_dir / "trials.sqlite"
    if not db.exists():
        return {}
    with Store.open(db, create=False) as store:
        records = list(store.records())
        calls = store.model_call_rows()
        config = json.loads((run_dir / "config.json").read_text())
    kinds = {a["name"]: a["agent"]["kind"] for a in config["experiment"]["arms"]}
    out: dict[str, dict[str, Any]] = {}
    for arm, kind in kinds.items():
        recs = [r for r in records if r.key.arm == arm]
        valid = [r for r in recs if r.verdict.valid]
        keys = Counter((r.key.task_id, r.key.trial) for r in valid)
        mine = [x for x in lines if x["headers"].get("x-agentrig-arm") == arm]
        rows = [c for c in calls if c["arm"] == arm and c["role"] == "agent"]
        causes = Counter(c for row in rows for c in (row["retry_causes"] or "").split(",") if c)
        injected = Counter(x["fault"] for x in mine if x.get("fault"))
        answered = [x for x in mine if x["status"] == 200 and x.get("usage")]
        saw = {f"{r.key.task_id}#{r.key.trial}": s for r in valid if (s := agent_saw(r, kind))}
        out[arm] = {
            "kind": kind,
            "trials": len(keys), "valid_rows": len(valid), "more_than_once": sorted(f"{t}#{i}" for (t, i), n in keys.items() if n > 1),
            "invalid_attempts": len(recs) - len(valid),
            "invalid_causes": sorted({(r.verdict.invalid_cause or "")[:200] for r in recs if not r.verdict.valid}),
            "solved": sum(1 for r in valid if r.verdict.reward == 1.0 and r.verdict.termination == "submitted"),
            "valid_keys": sorted(f"{t}#{i}" for t, i in keys),
            "solved_keys": sorted(f"{r.key.task_id}#{r.key.trial}" for r in valid
                                  if r.verdict.reward == 1.0 and r.verdict.termination == "submitted"),
            "unsolved": {f"{r.key.task_id}#{r.key.trial}": [r.verdict.termination, r.verdict.reward]
                         for r in valid if not (r.verdict.reward == 1.0 and r.verdict.termination == "submitted")},
            "retries": sum(c["retries"] for c in rows), "retry_causes": dict(causes),
            "fault_retries": sum(causes[c] for c in FAULT_CAUSES.values()),
            "faults_injected": sum(injected[k] for k in FAULT_CAUSES), "faults_by_kind": dict(injected),
            "outage_retries": sum(n for c, n in causes.items() if c not in FAULT_CAUSES.values()),
            "calls": len(rows), "calls_answered": sum(1 for c in rows if not c["error"]),
            "log_answered": len(answered),
            "usage": [sum(c["prompt_tokens"] for c in rows if not c["error"]),
                      sum(c["completion_tokens"] for c in rows if not c["error"])],
            "log_usage": [sum(x["usage"].get("prompt_tokens", 0) for x in answered),
                          sum(x["usage"].get("completion_tokens", 0) for x in answered)],
            "agent_saw_fault": saw,
        }
    return out


def problems(report: dict[str, Any], planned: dict[str, set[str]]) -> list[str]:
    """What keeps the run from being accepted (empty: accepted). ``planned``: arm → the trials
    ({"task#trial"}) that must be valid exactly once and solved (a trial left out, e.g. a task the
    agent's own policy refuses, may be played and fail)."""
    found = []
    if report.get("status") != "done":
        found.append(f"the run ended {report.get('status')!r} (exit {report.get('exit_code')}): "
                     f"{report.get('stderr_tail', '')[-500:]}")
    outage = report.get("outage") or {}
    if outage.get("planned_s") and not outage.get("run_alive_at_restart"):
        found.append("the outage did not fall in the run (it ended before the endpoint came back)")
    for arm, want in planned.items():
        a = (report.get("arms") or {}).get(arm)
        if a is None:
            found.append(f"{arm}: nothing stored")
            continue
        missing = sorted(want - set(a["valid_keys"]))
        if missing or a["more_than_once"]:
            found.append(f"{arm}: {len(want) - len(missing)} of {len(want)} trials valid; missing {missing}; "
                         f"more than once: {a['more_than_once']}")
        unsolved = sorted(want - set(a["solved_keys"]))
        if unsolved:
            found.append(f"{arm}: {len(want) - len(unsolved)} of {len(want)} solved; unsolved: "
                         f"{ {k: v for k, v in a['unsolved'].items() if k in unsolved} }")
        if a["fault_retries"] != a["faults_injected"]:
            found.append(f"{arm}: {a['fault_retries']} retries for faults ({a['retry_causes']}) but "
                         f"{a['faults_injected']} faults injected ({a['faults_by_kind']})")
        if a["calls_answered"] != a["log_answered"] or a["usage"] != a["log_usage"]:
            found.append(f"{arm}: {a['calls_answered']} calls recorded, usage {a['usage']}; the endpoint's log: "
                         f"{a['log_answered']} answered, usage {a['log_usage']}")
        if a["agent_saw_fault"]:
            found.append(f"{arm}: the agent saw a fault: {a['agent_saw_fault']}")
    return found
