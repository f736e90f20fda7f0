"""The controlled-variable check of ``agentrig compare``: every difference between two sides'
configurations, each classified.

A side's configuration is read from its run's stored snapshots (``run/snapshot.py``): the
comparability meta (data hashes, limits, user simulator, judge, per arm the agent settings, the
prompt hash, the plug-ins and the model settings of every role the arm calls) and the config
snapshot (planned trials, header NAMES and execution settings of the resolved roles, the arm
tables as written).

Each difference gets a kind:

- ``intended`` — the arms' intended changes, i.e. the arm table itself: the agent settings
  (``arm.agent.*``), the plug-ins, a role setting that one side's arm table overrides
  (``roles.X.field`` with ``[[arms]] roles.X.field`` set on either side), the prompt hash when an
  agent setting differs or a side uses a prompt file, the policy text hash when the arms chose
  different policy variants, and a role (agent or memory) that only one side calls because its
  agent or plug-ins differ;
- ``info`` — listed, but not a confound: the run seed (other random draws, no bias), execution
  settings (concurrency, timeouts, retry budget, the key variable's name) and the agentrig version;
- ``mismatch`` — anything else: data (task, db, policy hashes), limits, trials, benchmark, user
  simulator, judge, send_seed, and a model setting, endpoint or header set of any role that
  differs without either arm table asking for it (e.g. ``[roles.user] model`` changed between
  two runs). The built-in prompt changing under the same agent settings is a mismatch too.

Tasks or domains played by one side only are no difference: comparisons are paired over the tasks
both sides played. A missing snapshot is a mismatch (nothing can be checked).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

Kind = Literal["intended", "mismatch", "info"]

# the role settings that change what a model is asked (snapshot.COMPARED_ROLE_FIELDS + header names)
BEHAVIOUR_FIELDS = ("model", "temperature", "max_tokens", "seed", "extra_body", "base_url", "tool_choice",
                    "headers")
EXECUTION_FIELDS = ("api_key_env", "timeout_s", "deadline_s", "max_attempts", "max_concurrency",
                    "backoff_base_s", "backoff_max_s")
INFO_PATHS = {"run.seed", "run.concurrency", "run.max_invalid_retries", "agentrig"}
AGENT_ROLES = ("agent", "memory")
NOT_USED = "(not used)"
ABSENT = "(absent)"


class Difference(BaseModel):
    path: str
    a: Any
    b: Any
    kind: Kind

    def line(self) -> str:
        return f"{self.path}: {show(self.a)} → {show(self.b)}"


def show(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 1] + "…"


@dataclass(frozen=True)
class SideConfig:
    """What one side's run stored about its configuration (either may be None in an old store)."""

    label: str
    arm: str
    config: dict | None
    comparability: dict | None


def _arm_table(config: dict, arm: str) -> dict:
    for a in config.get("experiment", {}).get("arms", []):
        if a.get("name") == arm:
            return a
    return {}


def _overridden(config: dict | None, arm: str) -> dict[str, set[str]]:
    """role → the settings the arm's own table sets (not None)."""
    if not config:
        return {}
    out: dict[str, set[str]] = {}
    for role, settings in (_arm_table(config, arm).get("roles") or {}).items():
        fields = {f for f, v in (settings or {}).items() if v is not None}
        if fields & {"headers", "headers_from_env"}:
            fields.add("headers")
        out[role] = fields
    return out


def _header_names(resolved_role: dict) -> list[str]:
    return sorted(set(resolved_role.get("headers") or {}) | set(resolved_role.get("headers_from_env") or {}))


def _view(side: SideConfig) -> tuple[dict[str, Any], dict[str, dict[str, Any]], set[str], set[str]]:
    """(flat settings, roles called → their settings, domains, tasks) of one side."""
    comp, cfg = side.comparability or {}, side.config or {}
    flat: dict[str, Any] = {}
    if "benchmark" in comp:
        flat["benchmark.kind"] = comp["benchmark"].get("kind")
    for name, value in (comp.get("limits") or {}).items():
        flat[f"limits.{name}"] = value
    for name, value in (comp.get("run") or {}).items():
        flat[f"run.{name}"] = value
    run_cfg = (cfg.get("experiment") or {}).get("run") or {}
    for name in ("trials", "concurrency", "max_invalid_retries"):
        if name in run_cfg:
            flat[f"run.{name}"] = run_cfg[name]
    if "agentrig" in cfg:
        flat["agentrig"] = cfg["agentrig"]
    for section in ("user", "judge"):
        for name, value in (comp.get(section) or {}).items():
            flat[f"{section}.{name}"] = value
    arm = (comp.get("arms") or {}).get(side.arm) or {}
    agent = arm.get("agent") or {}
    for name, value in agent.items():
        flat[f"arm.agent.{name}"] = value
    if "prompt_sha" in arm:
        flat["arm.prompt_sha"] = arm["prompt_sha"]
    if "plugins" in arm:
        flat["arm.plugins"] = arm["plugins"]
    resolved = ((cfg.get("resolved") or {}).get(side.arm) or {}).get("roles") or {}
    roles: dict[str, dict[str, Any]] = {}
    for role, settings in (arm.get("roles") or {}).items():
        values = dict(settings)
        full = resolved.get(role) or {}
        if full:
            values["headers"] = _header_names(full)
            for name in EXECUTION_FIELDS:
                if name in full:
                    values[name] = full[name]
        roles[role] = values
    for domain, dv in (comp.get("domains") or {}).items():
        for name, digest in (dv.get("db") or {}).items():
            flat[f"data.{domain}.db.{name}"] = digest
        policies = dv.get("policies") or {}
        flat[f"data.{domain}.policy"] = policies.get(agent.get("policy", "default"), ABSENT)
    for task, digest in (comp.get("tasks") or {}).items():
        flat[f"data.tasks.{task}"] = digest
    domains = set((comp.get("domains") or {}))
    tasks = set((comp.get("tasks") or {}))
    return flat, roles, domains, tasks


def _one_sided(path: str, domains: set[str], tasks: set[str]) -> bool:
    """A task or a domain's data present on one side only: not a difference (pairing handles it)."""
    if path.startswith("data.tasks."):
        return path.removeprefix("data.tasks.") not in tasks
    if path.startswith("data."):
        return path.split(".")[1] not in domains
    return False


def differences(a: SideConfig, b: SideConfig) -> list[Difference]:
    """Every difference between the two sides' configurations, classified (see the module doc)."""
    out: list[Difference] = []
    for what, attr in (("comparability", "comparability"), ("config", "config")):
        has_a, has_b = getattr(a, attr) is not None, getattr(b, attr) is not None
        if not (has_a and has_b):
            out.append(Difference(path=f"snapshot.{what}", a="stored" if has_a else "missing",
                                  b="stored" if has_b else "missing", kind="mismatch"))
    flat_a, roles_a, domains_a, tasks_a = _view(a)
    flat_b, roles_b, domains_b, tasks_b = _view(b)
    common_domains, common_tasks = domains_a & domains_b, tasks_a & tasks_b
    over_a, over_b = _overridden(a.config, a.arm), _overridden(b.config, b.arm)

    changed: dict[str, tuple[Any, Any]] = {}
    for path in sorted(set(flat_a) | set(flat_b)):
        va, vb = flat_a.get(path, ABSENT), flat_b.get(path, ABSENT)
        if va != vb and not _one_sided(path, common_domains, common_tasks):
            changed[path] = (va, vb)
    agent_changed = any(p.startswith("arm.agent.") or p == "arm.plugins" for p in changed)
    prompt_files = "file" in (flat_a.get("arm.agent.prompt"), flat_b.get("arm.agent.prompt"))

    for path, (va, vb) in changed.items():
        if path.startswith("arm.agent.") or path == "arm.plugins":
            kind: Kind = "intended"
        elif path == "arm.prompt_sha":
            kind = "intended" if agent_changed or prompt_files else "mismatch"
        elif path.startswith("data.") and path.endswith(".policy"):
            kind = "intended" if "arm.agent.policy" in changed else "mismatch"
        elif path in INFO_PATHS:
            kind = "info"
        else:
            kind = "mismatch"
        out.append(Difference(path=path, a=va, b=vb, kind=kind))

    for role in [r for r in ("agent", "user", "memory", "judge") if r in roles_a or r in roles_b]:
        ra, rb = roles_a.get(role), roles_b.get(role)
        if ra is None or rb is None:
            used = ra or rb or {}
            summary = f"used (model {used.get('model')})"
            kind = "intended" if role in AGENT_ROLES and agent_changed else "mismatch"
            out.append(Difference(path=f"roles.{role}", a=summary if ra else NOT_USED,
                                  b=summary if rb else NOT_USED, kind=kind))
            continue
        arm_set = over_a.get(role, set()) | over_b.get(role, set())
        for name in sorted(set(ra) | set(rb)):
            va, vb = ra.get(name, ABSENT), rb.get(name, ABSENT)
            if va == vb:
                continue
            if name in EXECUTION_FIELDS:
                kind = "info"
            else:
                kind = "intended" if name in arm_set else "mismatch"
            out.append(Difference(path=f"roles.{role}.{name}", a=va, b=vb, kind=kind))
    return out
