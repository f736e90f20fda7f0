"""The agent service's ``volumes`` that every container sandbox honours: binds of the task's own folder.

``agent_binds(compose)`` reads the agent's service's ``volumes`` (short ``./data:/data:ro`` and
long ``{type: bind, source, target, read_only}`` syntax) as a list of ``Bind``: a source that lies
inside the compose file's directory (``./``, ``.``, ``./data``, or an absolute path that resolves
under it) at an absolute target, read-only with ``:ro`` / ``read_only: true``. The sandboxes give
the trial a **private copy** of the source there (``sandbox/binds.py``): writes stay in the trial
and the task's folder is never modified — the one difference from Docker's bind. A source that does
not exist is an empty directory (Docker's short syntax would create it on the host; agentrig never does).

The harness's own log volumes are skipped: Terminal-Bench's (``${T_BENCH_TASK_LOGS_PATH}:…``) and
Harbor's (``${HOST_VERIFIER_LOGS_PATH}:${ENV_VERIFIER_LOGS_PATH}``, and ``AGENT_LOGS`` and
``ARTIFACTS`` alike: Harbor sets ``HOST_X_PATH`` to the trial's log directory on the host and
``ENV_X_PATH`` to where it mounts it, ``/logs/verifier``, ``/logs/agent``, ``/logs/artifacts``;
``HARBOR_LOGS``). Their target is the harness's whatever default a ``${VAR:-default}`` writes; a
Harbor log source bound elsewhere (a literal target that is not the harness's) is refused.
Variables are read as Compose writes them — ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``,
``$VAR`` — before the volume is split at its colons, so a default's colon is not a separator.
Anything else — a named or anonymous volume, a source outside the task's folder (``../shared``,
``/mnt/data``, ``~/x``), a variable other than the harness's (``${HOME}/.config/gcloud``), an
option beyond ``ro``/``rw`` (and the no-op ``z``/``Z``/``cached``/``delegated``/``consistent``) —
raises ``ComposeError`` naming the mount and why; ``compose_check`` makes that the task's
``needs_container``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .compose import ComposeError, agent_service, compose_services

HARNESS = "T_BENCH_"  # Terminal-Bench's own volumes (its logs): the harness's, not the task's
# Harbor's log mounts (its compose_env's legacy variables): HOST_<X>_PATH:ENV_<X>_PATH, X -> the trial's directory
HARBOR_LOGS = {"VERIFIER_LOGS": "/logs/verifier", "AGENT_LOGS": "/logs/agent", "ARTIFACTS": "/logs/artifacts"}
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])(.*))?\}|([A-Za-z_][A-Za-z0-9_]*))$", re.DOTALL)
NO_EFFECT = {"z", "Z", "cached", "delegated", "consistent"}  # SELinux labels, macOS sync modes: nothing on a copy
LONG_KEYS = {"type", "source", "target", "read_only", "bind", "consistency"}
SPECIAL = ("/proc", "/dev", "/sys")


class Bind(BaseModel):
    source: Path  # resolved, inside the task's folder (need not exist: an empty directory then)
    target: str  # the absolute path the trial sees it at
    read_only: bool = False
    written: str  # the volume as the compose file writes it (for reasons and ``tasks show``)

    def shows(self, paths: list[Path]) -> list[Path]:
        """Those of `paths` (the task's tests, its solution) the trial sees through this bind."""
        return [p for p in paths if _inside(Path(p).resolve(), self.source)]


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or str(path).startswith(str(parent).rstrip(os.sep) + os.sep)


def _written(volume: Any) -> str:
    if isinstance(volume, dict):
        return ",".join(f"{k}={v}" for k, v in volume.items())
    return str(volume)


def split_volume(text: str) -> list[str]:
    """A short-syntax volume split at its colons, a ``${…}`` (its ``:-`` default included) kept whole."""
    parts, current, depth, i = [], "", 0, 0
    while i < len(text):
        if text.startswith("${", i):
            depth, current, i = depth + 1, current + "${", i + 2
            continue
        ch = text[i]
        if ch == "}" and depth:
            depth -= 1
        if ch == ":" and not depth:
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    return [*parts, current]


def _variable(text: str) -> tuple[str, str | None] | None:
    """(name, default) when `text` is one variable and nothing else (``$X``, ``${X}``, ``${X:-d}``,
    ``${X-d}``; the default None when none is written); None otherwise."""
    found = _VARIABLE.match(text.strip())
    if not found:
        return None
    name = found.group(1) or found.group(4)
    return name, (found.group(3) if found.group(2) in (":-", "-") else None)


def _harbor_log(source: str, target: str) -> bool:
    """True for Harbor's own log mount (``${HOST_X_PATH}:${ENV_X_PATH}``, any defaults): the
    harness's, skipped; raises ComposeError for Harbor's log directory bound at another path."""
    var = _variable(source)
    if var is None or not (var[0].startswith("HOST_") and var[0].endswith("_PATH")):
        return False
    kind = var[0].removeprefix("HOST_").removesuffix("_PATH")
    if kind not in HARBOR_LOGS:
        return False
    tvar = _variable(target)
    if (tvar is not None and tvar[0] == f"ENV_{kind}_PATH") or os.path.normpath(target or "/") == HARBOR_LOGS[kind]:
        return True
    raise ComposeError(f"binds Harbor's {HARBOR_LOGS[kind]} at {target}; agentrig gives the trial "
                       f"{HARBOR_LOGS[kind]} itself (write the target ${{ENV_{kind}_PATH}})")


def _parse(volume: Any) -> tuple[str, str, bool] | None:
    """(source, target, read_only) of one volume entry; None for the harness's own; raises
    ComposeError (its message: why, after the volume as written) for one not honoured."""
    if isinstance(volume, dict):
        if HARNESS in str(volume.get("source", "")):
            return None
        if _harbor_log(str(volume.get("source") or ""), str(volume.get("target") or "")):
            return None
        extra = sorted(set(volume) - LONG_KEYS)
        if extra:
            raise ComposeError(f"uses {', '.join(extra)}")
        kind = str(volume.get("type", "volume"))
        if kind != "bind":
            raise ComposeError(f"is a {kind} mount, not a bind of the task's folder")
        source, target, read_only = str(volume.get("source") or ""), str(volume.get("target") or ""), \
            bool(volume.get("read_only", False))
    else:
        text = str(volume)
        parts = split_volume(text)
        if HARNESS in parts[0]:
            return None
        if len(parts) > 1 and _harbor_log(parts[0], parts[1]):
            return None
        if len(parts) == 1:
            raise ComposeError("is an anonymous volume")
        if len(parts) > 3:
            raise ComposeError("is not SOURCE:TARGET[:OPTIONS]")
        source, target = parts[0], parts[1]
        options = parts[2].split(",") if len(parts) == 3 else []
        unknown = [o for o in options if o not in ("ro", "rw", *NO_EFFECT)]
        if unknown:
            raise ComposeError(f"has the option {', '.join(unknown)} (honoured: ro, rw)")
        read_only = "ro" in options
    if not source:
        raise ComposeError("has no source")
    if "$" in source or "$" in target:
        named = re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", source + ":" + target)
        raise ComposeError(f"names the variable {', '.join(dict.fromkeys(named)) or '$'} (only Terminal-Bench's "
                           f"and Harbor's log volumes are the harness's)")
    if not source.startswith((".", "/", "~")):
        raise ComposeError("is a named volume, not a bind of the task's folder")
    if not target.startswith("/") or os.path.normpath(target) == "/":
        raise ComposeError("has a target that is not an absolute path below /")
    return source, os.path.normpath(target), read_only


def agent_binds(compose: Path) -> list[Bind]:
    """The agent's service's binds of the task's own folder (see the module's docstring); raises
    ComposeError naming the first volume not honoured: ``mounts ../x:/x (its source is outside …)``."""
    compose = Path(compose)
    services = compose_services(compose)
    if not services:
        return []
    service = services.get(agent_service(services)) or {}
    volumes = service.get("volumes") or []
    if not isinstance(volumes, list):
        raise ComposeError(f"volumes of {compose.name} is not a list")
    folder = compose.parent.resolve()
    binds: list[Bind] = []
    for volume in volumes:
        written = _written(volume)
        try:
            parsed = _parse(volume)
            if parsed is None:
                continue
            source, target, read_only = parsed
            if source.startswith("~"):
                raise ComposeError("binds a path of the host's home, outside the task's folder")
            resolved = (folder / source).resolve()  # an absolute source stays itself
            if not _inside(resolved, folder):
                raise ComposeError(f"binds {resolved}, outside the task's folder {folder}")
            if any(_inside(Path(target), Path(s)) for s in SPECIAL):
                raise ComposeError(f"has the target {target}, which the sandbox provides itself")
        except ComposeError as exc:
            raise ComposeError(f"mounts {written} ({exc})") from None
        binds.append(Bind(source=resolved, target=target, read_only=read_only, written=written))
    targets = [b.target for b in binds]
    if len(set(targets)) != len(targets):
        raise ComposeError(f"mounts two volumes at one target ({', '.join(sorted({t for t in targets if targets.count(t) > 1}))})")
    return sorted(binds, key=lambda b: b.target.count("/"))  # a bind inside another's target after it


def what_binds_show(binds: list[Bind], task: Any) -> list[str]:
    """What of the task's tests and solution the agent can read through the binds (paths relative
    to the task's folder, e.g. ``tests``, ``solution.sh``): the task's authors chose it, as Docker
    would show them; ``tasks show`` warns about it."""
    root = Path(getattr(task, "path", ".")).resolve()
    wanted = [Path(p) for p in (getattr(task, "tests_dir", None), getattr(task, "run_tests", None),
                                getattr(task, "solution_script", None)) if p is not None and Path(p).exists()]
    shown: list[str] = []
    for bind in binds:
        for path in bind.shows(wanted):
            name = os.path.relpath(path.resolve(), root)
            if name not in shown:
                shown.append(name)
    return shown
