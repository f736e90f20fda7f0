"""What ``agentrig doctor --config`` checks: every (endpoint, model, wire) that any role of any arm
of the experiment resolves to, each with the arms and roles that use it.

An experiment that resolves (its data found) gives each arm's roles as a run calls them (the
agent's, the benchmark's participants', the plug-ins'; a role configured with a model that the arm
never calls is not checked for it, ``smoke.roles_to_check``); one that parses but does not resolve gives each arm every role that has a model; a file
that is only a channel ([channel] + [roles.X], no [benchmark]/[[arms]]) gives its configured roles.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from agentrig.channel.client import normalize_base_url
from agentrig.config import ROLES, ChannelConfig, ResolvedRole, load_channel_config, read_toml
from agentrig.errors import AgentrigError

Target = tuple[ResolvedRole, list[str], list[str]]  # (settings, roles, uses "arm: role")


def _ident(rr: ResolvedRole) -> tuple:
    return (normalize_base_url(rr.base_url), rr.api_key_env, rr.model, rr.tool_choice, rr.wire)


def _group(pairs: list[tuple[str | None, str, ResolvedRole]]) -> list[Target]:
    groups: dict[tuple, Target] = {}
    for arm, role, rr in pairs:
        rr0, roles, uses = groups.setdefault(_ident(rr), (rr, [], []))
        if role not in roles:
            roles.append(role)
        if arm is not None:
            uses.append(f"{arm}: {role}")
    for _, roles, _ in groups.values():
        roles.sort(key=ROLES.index)
    return list(groups.values())


def channel_targets(cfg: ChannelConfig, env: Mapping[str, str] | None = None) -> list[Target]:
    """A channel alone: its configured roles (no arms)."""
    return _group([(None, role, cfg.resolve(role, env)) for role in cfg.configured_roles()])


def doctor_targets(path: str | Path, env: Mapping[str, str] | None = None,
                   timeout_s: float | None = None) -> tuple[list[Target], str | None]:
    """(the targets, a note when the experiment could not be resolved in full)."""
    from .experiment import arm_channel, load, load_experiment

    def with_timeout(cfg: ChannelConfig) -> ChannelConfig:
        if timeout_s:
            cfg = cfg.model_copy(update={"channel": cfg.channel.model_copy(update={"timeout_s": timeout_s})})
        return cfg

    raw = read_toml(path)
    if "benchmark" not in raw and "arms" not in raw:  # a channel file, not an experiment
        return channel_targets(with_timeout(load_channel_config(path)), env), None
    cfg = with_timeout(load_channel_config(path))  # its own clear error for a bad [channel]/[roles.X]
    try:
        exp, _ = load_experiment(path)
    except AgentrigError as exc:
        note = (f"the experiment could not be read ({str(exc).splitlines()[0]}): "
                "only its [channel] and [roles.X] are checked")
        return channel_targets(cfg, env), note
    try:
        r = load(path)
    except AgentrigError as exc:
        note = (f"the experiment could not be resolved ({str(exc).splitlines()[0]}): "
                "every role of every arm that has a model is checked")
        pairs = []
        for arm in exp.arms:
            ch = with_timeout(arm_channel(exp, arm))
            for role in ROLES:
                rr = ch.resolve(role, env)
                if rr.model:
                    pairs.append((arm.name, role, rr))
        return (_group(pairs) or channel_targets(cfg, env)), note
    from .smoke import roles_to_check

    pairs = []
    for arm in r.arms:
        ch = with_timeout(arm.channel)
        for role in roles_to_check(r, arm):
            pairs.append((arm.name, role, ch.resolve(role, env)))
    if not pairs:
        return [], "no arm calls a model (reference agents only): nothing to check"
    return _group(pairs), None
