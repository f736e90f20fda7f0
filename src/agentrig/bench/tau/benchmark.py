"""τ²-bench as a ``Benchmark`` (``benchmark.py``): domains of tool-agent-user conversations.

    [benchmark] kind = "tau2", data, domains, split, task_ids, num_tasks   (settings.Tau2Settings)
    [user]  the user simulator (user.UserSettings)       [judge]  NL assertions (settings.JudgeSettings)

Tasks are ``(domain, Task)``. A trial is the half-duplex conversation of ``episode.py`` (agent ↔
user simulator ↔ tool environment, limits ``max_steps`` / ``max_errors`` / the wall clock), judged
by ``judge.py`` into a ``Verdict`` whose ``reward_info`` holds the components DB, ENV_ASSERTION,
ACTION, COMMUNICATE, NL_ASSERTION. Comparability covers each domain's db files and policy texts,
a hash of each selected task, the user simulator (settings, guidelines) and the judge settings.
The failure taxonomy is ``failures.py``; the ``tau2`` export (tau2-bench's ``results.json``) is
``export.py``; ``agentrig tasks …`` and ``agentrig audit`` are ``commands.py``.

The episode, the agents and the judge are imported when the first trial is played, not before.

Its own exceptions, each under a node of ``agentrig/errors.py``'s tree (drawn as there; this module
is named by ``exceptions=`` in its registry entry, ``agentrig/benchmark.py``, and
``tests/test_errors_tree.py`` reads the drawing):

    DataError
    └── EnvFunctionError    bench/tau/environment     a τ² task names an environment function its domain lacks
    InfrastructureFault
    └── JudgeFailed         bench/tau/judge_nl        the judge model's answers could not be read twice
    Signal
    ├── ToolError           bench/tau/toolkit         a τ² tool refuses the call: the agent reads ``Error: …``
    └── _Stop               bench/tau/episode         a τ² task's message history already ends the conversation
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from agentrig.agents.base import CONVERSATION_KINDS
from agentrig.benchmark import FirstRequest, Benchmark, Limits, Selection, json_sha, sha
from agentrig.errors import ConfigError, DataError

from .verdict import COMPONENTS
from . import data as tau_data
from .settings import JudgeSettings, Tau2Settings
from .user import UserSettings


def _rel(source: Path, value: str) -> Path:
    p = Path(value).expanduser()
    return p if p.is_absolute() else (source.parent / p).resolve()


def _needs_nl_judge(task: Any) -> bool:
    from .judge import needs_nl_judge

    return needs_nl_judge(task)


def _domain_bits(r: Any, domain: str, policy: Any) -> tuple[Any, Path, str]:
    """(spec, data directory, policy text) of a domain, cached per resolved experiment."""
    from .domains import get_domain

    cache = r.cache.setdefault("tau2", {})
    if ("spec", domain) not in cache:
        cache[("spec", domain)] = get_domain(domain)
        cache[("dir", domain)] = tau_data.domain_dir(r.data_root, domain)
    pkey = ("policy", domain, policy)
    if pkey not in cache:
        cache[pkey] = tau_data.load_policy(r.data_root, domain, policy)
    return cache[("spec", domain)], cache[("dir", domain)], cache[pkey]


_CLI_KINDS = CONVERSATION_KINDS  # agents we did not write, run by cli_agent.py

# what a user's first message usually takes (the user simulator writes it; about 100 tokens)
OPENING = "x" * 400


class Tau2Benchmark(Benchmark):
    kind = "tau2"
    settings_model = Tau2Settings
    tables = {"user": UserSettings, "judge": JudgeSettings}
    agent_kinds = ("llm", "gold", "flaky-gold", "noop", "python", "codex", "claude-code")
    component_names = COMPONENTS
    export_formats = {"tau2": "tau2-bench's results.json of one arm on one domain"}

    @property
    def failure_classes(self) -> dict[str, str]:  # type: ignore[override]
        from .failures import CLASSES

        return CLASSES

    # -- tasks ------------------------------------------------------------------------------
    def data_root(self, exp: Any, source: Path) -> Path | None:
        if exp.benchmark.data:
            return tau_data.resolve_data_root(_rel(source, exp.benchmark.data))
        if os.environ.get(tau_data.ENV_VAR):
            return tau_data.resolve_data_root(None)
        return None  # fine for built-in domains; domain_dir names the fix for the others

    def select(self, exp: Any, source: Path) -> Selection:
        from .domains import get_domain

        root = self.data_root(exp, source)
        b = exp.benchmark
        ids = b.task_ids
        if isinstance(ids, list) and len(b.domains) > 1:
            raise ConfigError(f"{source}: benchmark.task_ids is a list but {len(b.domains)} domains are selected.\n"
                              "  fix: name the ids per domain: task_ids = { airline = [\"0\"], retail = [\"3\"] }")
        if isinstance(ids, dict):
            extra = sorted(set(ids) - set(b.domains))
            if extra:
                raise ConfigError(f"{source}: benchmark.task_ids names domain(s) {', '.join(extra)} that are not in "
                                  f"benchmark.domains ({', '.join(b.domains)}).\n  fix: add them to domains or drop them")
        if len(set(b.domains)) != len(b.domains):
            raise ConfigError(f"{source}: benchmark.domains lists a domain twice")
        out: list[tuple[str, Any]] = []
        splits: dict[str, str | None] = {}
        for domain in b.domains:
            get_domain(domain)  # an unknown domain: ConfigError listing the known ones
            wanted = ids if isinstance(ids, list) else (ids or {}).get(domain)
            split = b.split
            if split == "all":
                split = None
            elif split is None and not wanted:
                split = "base" if "base" in tau_data.load_splits(root, domain) else None
            try:
                tasks = tau_data.select_tasks(root, domain, split=split, task_ids=wanted or None)
            except DataError as exc:
                raise DataError(f"{source}: benchmark of domain {domain!r}: {exc}") from None
            if b.num_tasks is not None:
                tasks = tasks[: b.num_tasks]
            if not tasks:
                raise ConfigError(f"{source}: no task selected in domain {domain!r}.\n  fix: check split / task_ids")
            splits[domain] = split
            out.extend((domain, t) for t in tasks)
        return Selection(out, root, splits)

    def prepare(self, exp: Any, source: Path, selection: Selection) -> None:
        """Install (or find cached) Codex and Claude Code for the arms that play them (a progress line)."""
        if any(arm.agent.kind in _CLI_KINDS for arm in exp.arms):
            import sys

            from agentrig.agents.installed.toolroot import install_arms

            install_arms(exp.arms, _CLI_KINDS, progress=lambda line: print(line, file=sys.stderr, flush=True))

    def check(self, exp: Any, source: Path, selection: Selection) -> None:
        if exp.user.kind == "llm":  # "tau2" guidelines without the files: a ConfigError naming the fix
            from .user_prompts import resolve_guidelines

            resolve_guidelines(exp.user.guidelines, selection.data_root, False)

    # -- arms -------------------------------------------------------------------------------
    def roles_needed(self, exp: Any, arm: Any, tasks: list[tuple[str, Any]]) -> set[str]:
        need: set[str] = set()
        if arm.agent.kind in ("python", *_CLI_KINDS):  # their model calls go through the trial's proxy to [roles.agent]
            need.add("agent")
        if exp.user.kind == "llm":
            need.add("user")
        if exp.judge.nl_assertions != "never" and any(_needs_nl_judge(t) for _, t in tasks):
            need.add("judge")
        return need

    def role_reason(self, exp: Any, role: str, arm: Any, tasks: list[tuple[str, Any]]) -> tuple[str, str]:
        if role == "agent" and arm.agent.kind in _CLI_KINDS:
            return (f"its agent kind is {arm.agent.kind!r} (its model calls go through the trial's proxy to [roles.agent])",
                    "set `model` in [roles.agent] (or [channel]), or use a reference agent (kind = \"gold\" / \"noop\")")
        if role == "agent" and arm.agent.kind == "python":
            return ("its agent kind is 'python' (your agent's model calls go through the trial's proxy to [roles.agent])",
                    "set `model` in [roles.agent] (or [channel]), or use a reference agent (kind = \"gold\" / \"noop\")")
        if role == "user":
            return ("the user simulator is an LLM ([user] kind = \"llm\")",
                    "set `model` in [roles.user] (or [channel]), or use the scripted user ([user] kind = \"scripted\")")
        if role == "judge":
            return ("task(s) " + ", ".join(sorted({f"{d}/{t.id}" for d, t in tasks if _needs_nl_judge(t)})[:5])
                    + " have nl_assertions and NL_ASSERTION in their reward basis",
                    "set `model` in [roles.judge] (or [channel]), or [judge] nl_assertions = \"never\" "
                    "(those components are then not computed)")
        return super().role_reason(exp, role, arm, tasks)

    def check_arm(self, exp: Any, where: str, arm: Any, tasks: list[tuple[str, Any]]) -> None:
        super().check_arm(exp, where, arm, tasks)
        from agentrig.agents.installed.cli_trial import check_conversation_settings
        from agentrig.agents.python_agent import check_agent

        check_agent(arm.agent, where, exp, arm)
        if arm.agent.kind in CONVERSATION_KINDS:
            check_conversation_settings(arm.agent, where)
        policy = arm.agent.policy
        for domain in sorted({d for d, _ in tasks}):
            if policy not in tau_data.policy_variants(domain):
                raise ConfigError(f"{where}: agent.policy {policy!r} is not a policy of domain {domain!r}.\n"
                                  f"  fix: use one of: {', '.join(tau_data.policy_variants(domain))}")

    # -- runs -------------------------------------------------------------------------------
    def comparability(self, r: Any) -> dict[str, Any]:
        from .domains import get_domain

        domains: dict[str, dict] = {}
        for domain in dict.fromkeys(d for d, _ in r.tasks):
            ddir = tau_data.domain_dir(r.data_root, domain)
            variants = sorted({a.agent.policy for a in r.arms})
            domains[domain] = {
                "db": _domain_files(get_domain(domain), ddir),
                "policies": {v: sha(tau_data.load_policy(r.data_root, domain, v)) for v in variants},
            }
        return {
            "user": _user_snapshot(r),
            "judge": r.exp.judge.model_dump(mode="json"),
            "domains": domains,
            "tasks": {f"{d}/{t.id}": json_sha(t.to_file_dict()) for d, t in r.tasks},
        }

    def trial_context(self, r: Any, spec: Any, ctx: Any) -> Any:
        from .domain import TauTrial

        ctx.bench = TauTrial(*_domain_bits(r, spec.key.domain, spec.arm.agent.policy))
        return ctx

    def warm(self, r: Any) -> None:
        """Every domain's spec, policies and parsed databases (both the copy-on-write base and the
        parsed file a judge's replay copies), and the episode's modules."""
        from . import episode  # noqa: F401 - imported for its import time
        from .environment import Environment

        for domain in dict.fromkeys(d for d, _ in r.tasks):
            for arm in r.arms:
                spec, directory, _ = _domain_bits(r, domain, arm.agent.policy)
            Environment.fresh(spec, directory, copy_on_write=True)
            Environment.fresh(spec, directory)

    def worker_data(self, r: Any) -> list[Path]:
        """Each domain's directory under the data root (database, policies) and the user
        simulator's guidelines; a domain shipped inside the package is on every node already."""
        from .domains import get_domain
        from .user_prompts import GUIDELINES_DIR

        root = Path(r.data_root)
        out = [root / "domains" / d for d in dict.fromkeys(d for d, _ in r.tasks) if get_domain(d).builtin_dir is None]
        if r.exp.user.kind == "llm" and (root / GUIDELINES_DIR).is_dir():
            out.append(root / GUIDELINES_DIR)
        return out

    async def play(self, r: Any, ctx: Any, arm: Any, limits: Limits, attempt: int = 0) -> Any:
        from .episode import play_trial

        return await play_trial(ctx, agent=arm.agent, user=r.exp.user, plugins=arm.plugins, limits=limits,
                                nl_judge=r.exp.judge.nl_assertions, attempt=attempt)

    def smoke_task(self, r: Any) -> tuple[str, Any]:
        """One that needs the judge when some arm would call it, else the first."""
        if any("judge" in a.roles_needed for a in r.arms):
            for domain, task in r.tasks:
                if _needs_nl_judge(task):
                    return domain, task
        return r.tasks[0]

    def expected_calls(self, r: Any, arm: Any, domain: str, task: Any) -> dict[str, float] | None:
        """The calls of a trial that plays the task's gold conversation: the agent makes each of its
        gold actions and says one text per run of user actions it asks for, plus one stating the
        outcome (none when it ends by a transfer to a human with nothing to communicate); the user
        opens, answers each of those texts, makes each of its gold actions (one reply each); the
        judge is asked once when the task needs it. A real model takes more turns than the gold;
        ``run --estimate`` scales these on the trials it has."""
        actions = task.gold_actions
        asks = sum(1 for i, a in enumerate(actions) if a.requestor == "user"
                   and (i == 0 or actions[i - 1].requestor != "user"))
        by_user = sum(1 for a in actions if a.requestor == "user")
        criteria = task.evaluation_criteria
        last = actions[-1] if actions else None
        transferred = last is not None and last.requestor != "user" and last.name == "transfer_to_human_agents"
        told = 0 if transferred and not (criteria is not None and criteria.communicate_info) else 1
        calls = {"agent": float(len(actions) - by_user + asks + told), "user": float(1 + asks + by_user + told),
                 "judge": 1.0 if _needs_nl_judge(task) else 0.0}
        return {role: n for role, n in calls.items() if role in arm.roles_needed}

    # -- analysis ---------------------------------------------------------------------------
    def failure_context(self, config: dict) -> dict[str, tuple[dict, Any]]:
        from agentrig.errors import AgentrigError

        from .domains import get_domain

        out = {}
        for d in config.get("tasks") or {}:
            try:
                out[d] = ({t.id: t for t in tau_data.load_tasks(config.get("data_root"), d)}, get_domain(d))
            except AgentrigError as exc:
                raise DataError(f"the tasks of domain {d!r} cannot be loaded ({exc})") from None
        return out

    def task_values(self, config: dict) -> dict[str, list[str]]:
        """Per task: its id, the values in its gold actions, assertions, information to
        communicate and initial state, and the ids and amounts in the user's instructions."""
        from agentrig.benchmark import literal_values

        out: dict[str, list[str]] = {}
        for domain, (tasks, _) in self.failure_context(config).items():
            wanted = set((config.get("tasks") or {}).get(domain) or [])
            for task in tasks.values():
                if task.id not in wanted:
                    continue
                data = task.model_dump(mode="json")
                values = {task.id} if len(task.id) >= 3 else set()  # a task id is a value, whatever it looks like
                values |= literal_values(data.get("evaluation_criteria"))
                values |= literal_values(data.get("initial_state"))
                values |= literal_values(data.get("user_scenario"), prose=True)
                out[f"{domain}/{task.id}"] = sorted(values)
        return out

    def classify(self, record: Any, context: Any) -> Any:
        from .failures import classify

        tasks, spec = context[record.key.domain]
        task = tasks.get(record.key.task_id)
        return classify(record, task, spec) if task is not None else None

    # -- exports and commands ---------------------------------------------------------------
    def export(self, fmt: str, store: Any, config: dict, run_dir: Path, *, arm: str | None = None,
               domain: str | None = None, out_path: Path | None = None) -> tuple[int, Path, str]:
        if fmt != "tau2":
            return super().export(fmt, store, config, run_dir, arm=arm, domain=domain, out_path=out_path)
        from .export import export_run

        n, target = export_run(store, config, run_dir, arm=arm, domain=domain, out_path=out_path)
        return n, target, "simulation(s)"

    def first_requests(self, r: Any) -> list[FirstRequest]:
        """Each LLM arm's agent built as a trial builds it, per domain: its system prompt (preamble and
        the domain's policy), its tools (native mode), the greeting and an opening user message. An
        arm whose agent we did not write (a Python agent, Codex, Claude Code): the request it really
        sends first, run for one step on the first task against a stub (``first_request.py``)."""
        from concurrent.futures import ThreadPoolExecutor
        from dataclasses import replace
        from types import SimpleNamespace

        from .first_request import CAPTURED_KINDS, first_request

        from agentrig.agents import build_agent
        from agentrig.agents.base import GREETING

        out: list[FirstRequest] = []
        made: dict[tuple[str, str], FirstRequest] = {}
        for arm in r.arms:
            if arm.agent.kind in CAPTURED_KINDS and r.tasks:  # arms alike (agent settings, model): run once
                key = (arm.agent.model_dump_json(), arm.channel.resolve("agent", env={}).model or "")
                if key not in made:
                    with ThreadPoolExecutor(1) as pool:  # its own loop, whether or not one runs here
                        made[key] = pool.submit(asyncio.run, first_request(r, self, arm)).result()
                req = made[key]
                out.append(req if req.arm == arm.name else replace(
                    req, arm=arm.name, where=req.where.replace(f"arm {req.arm},", f"arm {arm.name},", 1),
                    tools_where=req.tools_where.replace(f"arm {req.arm},", f"arm {arm.name},", 1),
                    problem=req.problem and req.problem.replace(f"arm {req.arm},", f"arm {arm.name},", 1)))
                continue
            if arm.agent.kind != "llm":
                continue
            for domain in dict.fromkeys(d for d, _ in r.tasks):
                ctx = SimpleNamespace(channel=object())
                self.trial_context(r, SimpleNamespace(key=SimpleNamespace(domain=domain), arm=arm), ctx)
                agent = build_agent(arm.agent, ctx)
                messages = [*agent.messages, {"role": "assistant", "content": GREETING},
                            {"role": "user", "content": OPENING}]
                out.append(FirstRequest(arm=arm.name, where=f"arm {arm.name}, domain {domain}, tool_mode {arm.agent.tool_mode}",
                                        messages=messages, tools=list(getattr(agent, "tools", None) or []),
                                        tools_where=f"arm {arm.name}, domain {domain}"))
        return out

    def tasks_app(self) -> Any:
        from .commands import tasks_app

        return tasks_app

    def audit_command(self) -> Any:
        from .commands import audit_command

        return audit_command

    def scripted_endpoint(self, **settings: Any) -> Any:
        """The gold endpoint (``scripted/gold_endpoint.py``) over the built-in domains."""
        from .scripted.gold_endpoint import GoldEndpoint

        return GoldEndpoint(None, **settings)


def _domain_files(spec: Any, ddir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for group in (spec.db_files, spec.user_db_files):
        for name in group:
            path = ddir / name
            if path.is_file():
                out[name] = sha(path.read_bytes())
                break
    return out


def _user_snapshot(r: Any) -> dict[str, Any]:
    from .domains import get_domain
    from .user_prompts import resolve_guidelines

    u = r.exp.user
    snap: dict[str, Any] = u.model_dump(mode="json")
    if u.kind == "llm":
        with_tools = any(get_domain(d).user_toolkit is not None for d in {d for d, _ in r.tasks})
        texts = [resolve_guidelines(u.guidelines, r.data_root, tools)
                 for tools in ((False, True) if with_tools else (False,))]
        snap["guidelines_source"] = sorted({src for _, src in texts})
        snap["guidelines_sha"] = sha("\n\x00\n".join(t for t, _ in texts))
    return snap
