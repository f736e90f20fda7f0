"""What a run directory remembers about its experiment: the config snapshot and comparability.

``config_snapshot`` is written to ``config.json`` (and the store's ``config`` meta): the whole
experiment as resolved, without secrets — key variables by NAME only, header values read from the
environment never, every text passed through ``agentrig.redact``.

``comparability`` is what makes two trials comparable: the benchmark's part
(``Benchmark.comparability``; τ²: a hash of each selected task, of each domain's db files and
policy texts, the user simulator's settings and a hash of its guidelines, the judge settings),
the limits, and per arm the agent settings, the hash of its system prompt preamble (a Python
agent: of its entry's module file), its
plug-ins (with the hash of a plug-in's prompts where it has one) and the model settings of every role it calls (model, temperature, max_tokens, seed,
extra_body, base_url, tool_choice, and wire when it is not chat — not keys, not concurrency or timeouts). Comparing two
snapshots (``differences``, ``merged``) and writing them are the run directory's
(store/rundir.py ``open_run``).
"""

from __future__ import annotations

import json
from typing import Any

from agentrig import __version__
from agentrig.agents import prompts as agent_prompts
from agentrig.agents.installed.toolroot import DEFAULT_VERSIONS
from agentrig.benchmark import sha
from agentrig.redact import read_secret, redact, redact_url

from .experiment import Resolved

COMPARED_ROLE_FIELDS = ("model", "temperature", "max_tokens", "seed", "extra_body", "base_url", "tool_choice")


def _role_settings(r: Resolved, arm_index: int) -> dict[str, dict]:
    arm = r.arms[arm_index]
    out = {}
    for role in arm.roles_needed:
        rr = arm.channel.resolve(role)
        values = {f: getattr(rr, f) for f in COMPARED_ROLE_FIELDS}
        values["base_url"] = redact_url(rr.base_url.rstrip("/"))
        if rr.wire != "chat":  # the API the role speaks; absent for chat, so older snapshots stay equal
            values["wire"] = rr.wire
        out[role] = values
    return out


def _plugin(settings: Any) -> dict[str, Any]:
    """A plug-in's settings, with the hash of its texts when the plug-in gives one (the memory
    plug-in's prompts: a changed prompt makes old and new trials incomparable); a plug-in with a
    ``comparable(settings)`` gives its own entry (guidelines: the file's content hash and its
    source run, arm, split and tasks instead of its path)."""
    from agentrig import plugins

    factory = plugins.REGISTRY.get(settings.kind)
    comparable = getattr(factory, "comparable", None)
    if comparable is not None:  # the plug-in says what of it is compared (guidelines: file hash, sources)
        return comparable(settings)
    out = settings.model_dump(mode="json")
    texts = getattr(factory, "prompts_sha", None)
    if texts is not None:
        out["prompts_sha"] = texts()
    return out


# agent settings added after runs were stored (issue 32: agents we did not write): left out of the
# snapshot while at their defaults, so a run stored before them compares equal and resumes
LATER_AGENT_FIELDS = ("version", "run", "config", "config_file", "args", "mount",
                      "entry", "settings", "python", "path", "client")  # and issue 35: a Python agent


def comparability(r: Resolved) -> dict[str, Any]:
    exp = r.exp
    arms: dict[str, dict] = {}
    for i, arm in enumerate(r.arms):
        agent = arm.agent.model_dump(mode="json")
        for name in LATER_AGENT_FIELDS:  # at their defaults they change nothing: runs made before them still resume
            if agent.get(name) == type(arm.agent).model_fields[name].get_default(call_default_factory=True):
                agent.pop(name, None)
        if arm.agent.kind in DEFAULT_VERSIONS:  # an installed agent's version as played: a new pinned default is another agent
            agent["version"] = arm.agent.version or DEFAULT_VERSIONS[arm.agent.kind]
        text = agent_prompts.preamble(arm.agent.prompt, text_mode=arm.agent.tool_mode == "text",
                                      parallel_tool_calls=arm.agent.parallel_tool_calls)
        agent["prompt"] = "default" if arm.agent.prompt == "default" else "file"
        if arm.agent.kind == "python":  # a user's Python agent: its entry module's code, as a prompt's text
            from agentrig.agents.python_agent import entry_sha

            agent["entry_sha"] = entry_sha(arm.agent)
        arms[arm.name] = {
            "agent": agent,
            "prompt_sha": sha(text),
            "plugins": [_plugin(p) for p in arm.plugins],
            "roles": _role_settings(r, i),
        }
    return {
        "benchmark": {"kind": exp.benchmark.kind},
        "limits": {"max_steps": exp.run.max_steps, "max_errors": exp.run.max_errors,
                   "trial_timeout_s": exp.run.trial_timeout_s},
        "run": {"seed": exp.run.seed, "send_seed": exp.run.send_seed},
        **r.benchmark.comparability(r),  # τ²: user, judge, domains, tasks
        "arms": arms,
    }


# ------------------------------------------------------------------------------ config.json


def _register_secrets(r: Resolved) -> None:
    """Read every key and header variable once, so that ``redact`` knows their values."""
    for arm in r.arms:
        for role in ("agent", "user", "memory", "judge"):
            rr = arm.channel.resolve(role)
            read_secret(rr.api_key_env)
            for var in rr.headers_from_env.values():
                read_secret(var)


def config_snapshot(r: Resolved, run_id: str) -> dict[str, Any]:
    """The experiment as resolved, fit to store: no key, no header value from the environment."""
    _register_secrets(r)
    arms = {}
    for arm in r.arms:
        roles = {}
        for role in ("agent", "user", "memory", "judge"):
            rr = arm.channel.resolve(role)
            d = rr.model_dump(mode="json")
            d["base_url"] = redact_url(rr.base_url)
            d["headers_from_env"] = {h: f"${var}" for h, var in rr.headers_from_env.items()}
            roles[role] = d
        arms[arm.name] = {"roles": roles, "roles_needed": arm.roles_needed}
    exp = r.exp.model_dump(mode="json")
    for arm_dump, arm in zip(exp["arms"], r.arms):
        arm_dump["agent"]["prompt"] = arm.agent.prompt
    tasks: dict[str, list[str]] = {}
    for d, t in r.tasks:
        tasks.setdefault(d, []).append(t.id)
    snap = {
        "agentrig": __version__,
        "run_id": run_id,
        "name": r.name,
        "source": str(r.source),
        "run_dir": str(r.run_dir),
        "data_root": str(r.data_root) if r.data_root else None,
        "splits": r.splits,
        "tasks": tasks,
        "experiment": exp,
        "resolved": arms,
    }
    if r.excluded:  # tasks the benchmark left out before the run, with why
        snap["excluded"] = dict(r.excluded)
    return json.loads(redact(json.dumps(snap, ensure_ascii=False)))
