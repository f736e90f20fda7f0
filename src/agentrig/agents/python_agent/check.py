"""A Python agent's settings, checked when the experiment loads, and its preflight: the runner
started with the agent's interpreter imports the entry (``runner.py --check``) before any trial."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from agentrig.errors import ConfigError
from agentrig.redact import redact, register_secret

RUNNER = Path(__file__).resolve().parent / "child" / "runner.py"
PYTHON_FIELDS = ("entry", "settings", "python", "path", "client")  # kind python's own settings
PREFLIGHT_TIMEOUT_S = 180.0  # importing a large agent (torch…) takes a while; a hang guard
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
ENTRY = re.compile(rf"{_NAME}(\.{_NAME})*:{_NAME}(\.{_NAME})*")
EXAMPLE = 'agent = { kind = "python", entry = "my_agent:make", path = ["."] }'
_checked: dict[tuple, str | None] = {}  # preflights that passed in this process → the entry's module file


def interpreter(agent: Any) -> str:
    """The agent's interpreter: ``agent.python`` (a path, or a command found on PATH), else the
    Python running agentrig."""
    python = agent.python
    if not python:
        return sys.executable
    if os.sep in python:
        return python
    return shutil.which(python) or python


def check_settings(agent: Any, where: str) -> None:
    """The settings of kind python, and none of them on another kind (each error names the field)."""
    if agent.kind != "python":
        for name in PYTHON_FIELDS:
            if name in agent.model_fields_set:
                raise ConfigError(f"{where}: agent.{name} is for kind \"python\" (your own Python agent), not "
                                  f"{agent.kind!r}.\n  fix: remove `{name}`, or set kind = \"python\"")
        return
    entry = (agent.entry or "").strip()
    if not entry:
        raise ConfigError(f"{where}: agent kind \"python\" needs `entry`, the function that makes your agent "
                          "(\"module:function\", called as make(settings, client, model)).\n"
                          f"  fix: e.g. {EXAMPLE}")
    if not ENTRY.fullmatch(entry):
        raise ConfigError(f"{where}: agent.entry {agent.entry!r} is not \"module:function\" (a dotted module name, "
                          "a colon, the function's name).\n  fix: e.g. entry = \"my_pkg.agent:make\"")
    python = interpreter(agent)
    if agent.python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise ConfigError(f"{where}: agent.python {agent.python} is not an executable file"
                          f"{' (resolved against the experiment file)' if os.sep in agent.python else ' on PATH'}.\n"
                          "  fix: give your agent's interpreter, e.g. python = \"venv/bin/python\" (relative to the "
                          "experiment file), or leave it out to use the Python running agentrig")
    for p in agent.path:
        if not Path(p).is_dir():
            raise ConfigError(f"{where}: agent.path {p} is not a directory.\n"
                              "  fix: give the directories your agent's modules are in (relative to the experiment file)")


# variables never passed to the agent's interpreter (besides every variable holding a known secret):
# agentrig's own Python settings, the SDKs' key variables and the sealed keys of a Ray worker
DROPPED_VARS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")
DROPPED_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AGENTRIG_SEALED_")


def without_secrets(environ: Mapping[str, str], secret: Iterable[str], *more: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables ``secret`` names, without any variable whose value is a
    secret — those variables' values (in ``environ`` and in each of ``more``) are registered first,
    so they are dropped under any other name too —, and without ``DROPPED_VARS``/``DROPPED_PREFIXES``."""
    secret = set(secret)
    for name in secret:
        for source in (environ, *more):
            register_secret(source.get(name))
    return {k: v for k, v in environ.items()
            if k not in secret and k not in DROPPED_VARS and not k.startswith(DROPPED_PREFIXES) and redact(v) == v}


def _environment(secret: frozenset[str] = frozenset()) -> dict[str, str]:
    """The preflight's environment: no key agentrig knows of — ``secret``, the variables the run's
    channel reads keys and secret headers from, and their values under any other name —, none of
    its PYTHON* settings."""
    return without_secrets(os.environ, secret)


def channel_secrets(exp: Any, arm: Any) -> frozenset[str]:
    """The variables the arm's channel may read keys and secret headers from: every layer's
    (``[channel]``, ``[roles.X]``, the arm's ``roles.X``) ``api_key_env`` and ``headers_from_env``,
    and the default key variable — a superset of what each role resolves to."""
    from agentrig.config import DEFAULT_KEY_ENV

    names: set[str] = {DEFAULT_KEY_ENV}
    for layer in (exp.channel, *(exp.roles or {}).values(), *(getattr(arm, "roles", None) or {}).values()):
        if layer is None:
            continue
        if getattr(layer, "api_key_env", None):
            names.add(layer.api_key_env)
        names |= set((getattr(layer, "headers_from_env", None) or {}).values())
    return frozenset(names)


def preflight(agent: Any, where: str, secret: frozenset[str] = frozenset()) -> None:
    """Start the runner with the agent's interpreter and import the entry there: a ConfigError naming
    ``agent.python`` or ``agent.entry`` and the fix when it cannot. ``secret``: the channel's key
    variables (``channel_secrets``), kept out of the runner's environment."""
    python = interpreter(agent)
    key = _key(agent)
    if key in _checked:
        return
    argv = [python, str(RUNNER), "--check", agent.entry.strip(), "--client", agent.client]
    for p in agent.path:
        argv += ["--path", p]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PREFLIGHT_TIMEOUT_S,
                              env=_environment(secret), stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise ConfigError(f"{where}: agent.python: cannot start {python}: {exc.strerror or exc}.\n"
                          "  fix: give the path of a Python interpreter (your venv's bin/python)") from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"{where}: agent.entry {agent.entry!r}: importing it with {python} took more than "
                          f"{PREFLIGHT_TIMEOUT_S:.0f}s.\n  fix: make the module cheap to import (no work at import "
                          "time)") from None
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        result = None
    if done.returncode != 0 or not isinstance(result, dict):
        tail = redact(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit code {done.returncode}")
        raise ConfigError(f"{where}: agent.python: {python} could not run agentrig's agent runner ({tail[:300]}).\n"
                          "  fix: give a Python 3.8 or newer interpreter (your venv's bin/python)")
    if not result.get("ok"):
        error = redact(str(result.get("error") or ""))[:500]
        stage = result.get("stage")
        if stage == "client":
            raise ConfigError(f"{where}: agent.client = {agent.client!r}: {error} ({python}).\n"
                              f"  fix: install it into that interpreter ({python} -m pip install {agent.client}), "
                              "or set client = \"auto\"")
        if stage == "entry":
            raise ConfigError(f"{where}: agent.entry: {error}.\n  fix: name the function that makes your agent, "
                              "make(settings, client, model)")
        module = agent.entry.split(":", 1)[0]
        searched = ", ".join(agent.path) if agent.path else "no agent.path given"
        raise ConfigError(f"{where}: agent.entry {agent.entry!r}: cannot import it with {python}: {error}.\n"
                          f"  fix: check the module name {module!r} and agent.path ({searched}; relative to the "
                          "experiment file), and that the module's dependencies are installed in that interpreter")
    _checked[key] = result.get("file") if isinstance(result.get("file"), str) else None


def _key(agent: Any) -> tuple:
    return (interpreter(agent), agent.entry, agent.client, tuple(agent.path))


def entry_sha(agent: Any) -> str | None:
    """A hash of the entry's module file as the agent's interpreter finds it (the preflight's), for
    the run's comparability: a changed module is another agent. None when it has no file."""
    from agentrig.benchmark import sha

    preflight(agent, "agent")
    file = _checked.get(_key(agent))
    try:
        return sha(Path(file).read_bytes()) if file else None
    except OSError:
        return None


def check_agent(agent: Any, where: str, exp: Any = None, arm: Any = None) -> None:
    """What every benchmark checks of an arm's agent before the run: kind python's settings (and
    none of them on another kind), then, for kind python, the preflight — its environment without
    the keys of the arm's channel (``exp``, ``arm``) under any name."""
    check_settings(agent, where)
    if agent.kind == "python":  # its interpreter starts and imports the entry, before any trial
        preflight(agent, where, channel_secrets(exp, arm) if exp is not None and arm is not None else frozenset())
