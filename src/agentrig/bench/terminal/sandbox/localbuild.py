"""Dockerfile steps under the local sandbox: built once per task into a cached template, copied per trial.

As root (private mount namespaces, ``localns.py``) the local sandbox plays a task's Dockerfile
subset like bwrap does — ``WORKDIR``, ``COPY``/``ADD`` (``--chown``/``--chmod``, tar archives),
``RUN`` with the ``ENV``/``ARG`` values so far, from the current ``WORKDIR`` — but on this machine:
each step runs in a private mount namespace where the template's directories are bind-mounted at
the task's top-level paths (``/app``, ``/tests`` …, the ones a trial gets), ``/tmp`` is the
build's own scratch directory (the build context is read-only at ``/tmp/.agentrig-build-context``,
``HOME`` is ``/tmp/.agentrig-home``), and everything else is the host's. **Nothing is isolated**:
what a ``RUN`` step writes elsewhere (``apt-get install``, ``/etc``, ``/usr/local``) is written
to this machine, as the agent's own commands are.

The template — the top-level directories and ``HOME`` the steps left — is cached in
``CACHE/local/KEY`` (``KEY`` hashes the plan, every file ``COPY``/``ADD`` reads, the working
directory and the top-level directories): k trials and later runs reuse it, builds of one key
wait on a file lock, and each trial copies it (``cp -a``) into its own root. What the build left
in ``/tmp`` is not kept (trials use the host's ``/tmp``). Without root none of this happens: the
task is ``needs_container`` as before (``local_problem``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from ..core.base import BASE_ENV, SandboxError, TaskBuildError
from ..shell import run_process, subprocess_spawn
from ..tasks.dockerfile import BuildPlan
from . import localns

LOCAL_FORMAT = "1"
CONTEXT_DIR = ".agentrig-build-context"  # under the build's private /tmp
HOME_DIR = ".agentrig-home"  # HOME during the build, under the build's private /tmp; kept as the template's home
BUILD_OPS = ("RUN", "COPY", "ADD", "WORKDIR")


def _in_tmp(path: str) -> bool:
    norm = os.path.normpath(path)
    return norm == "/tmp" or norm.startswith("/tmp/")


def placement_problem(plan: BuildPlan | None, workdir: str) -> str | None:
    """Why the private mounts cannot hold this plan's files (None: they can)."""
    if localns.top_of(workdir) is None:
        return f"cannot place the working directory {workdir} (it would be this machine's own)"
    for step in plan.steps if plan else []:
        if step.op in ("COPY", "ADD", "WORKDIR") and localns.top_of(step.dest) is None and not _in_tmp(step.dest):
            return (f"places files only under the task's own top-level directories and /tmp: Dockerfile line "
                    f"{step.line} ({step.op} {step.dest}) would write this machine's {step.dest}")
    return None


def local_problem(plan: BuildPlan | None, workdir: str) -> str | None:
    """The ``needs_container`` reason the local sandbox cannot run this plan here, or None."""
    why = localns.unavailable()
    if why is not None:
        if plan is not None and any(s.op == "RUN" for s in plan.steps):
            return ("needs_container: the local sandbox does not run Dockerfile RUN steps here (it runs them "
                    f"only in a private mount namespace, and {why})")
        return None
    problem = placement_problem(plan, workdir)
    return f"needs_container: the local sandbox {problem}" if problem else None


def needs_template(plan: BuildPlan | None) -> bool:
    return plan is not None and any(s.op in BUILD_OPS for s in plan.steps)


def template_key(plan: BuildPlan, context: Path | None, workdir: str, tops: list[str]) -> str:
    digest = hashlib.sha256(f"local|{LOCAL_FORMAT}|{workdir}|{','.join(sorted(tops))}|".encode())
    digest.update(plan.content_hash(context or Path("/nonexistent")).encode())
    return digest.hexdigest()[:32]


async def ensure_template(plan: BuildPlan, context: Path | None, workdir: str, tops: list[str], cache_dir: Path,
                          *, timeout_s: float, output_limit: int) -> Path:
    """The task's template directory (``tops/<top>``, ``home``): from the cache, or built now."""
    from .build import _lock, _unlock  # the bwrap build's file lock, shared

    key = template_key(plan, context, workdir, tops)
    root = cache_dir / "local"
    root.mkdir(parents=True, exist_ok=True)
    final = root / key
    if (final / "meta.json").exists():
        return final
    lock = await _lock(root / f"{key}.lock")
    try:
        if (final / "meta.json").exists():
            return final
        staging = root / f".build-{key}-{os.getpid()}-{time.monotonic_ns()}"
        try:
            await _build(staging, plan, context, workdir, tops, timeout_s=timeout_s, output_limit=output_limit)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        (staging / "meta.json").write_text(json.dumps({
            "key": key, "workdir": workdir, "tops": tops, "base": plan.base, "built_at": time.time(),
            "steps": len(plan.steps),
        }, indent=2))
        os.rename(staging, final)
        return final
    finally:
        _unlock(lock)


async def _build(staging: Path, plan: BuildPlan, context: Path | None, workdir: str, tops: list[str], *,
                 timeout_s: float, output_limit: int) -> None:
    from .build import _copy_script

    tmp = staging / "tmp"
    (tmp / HOME_DIR).mkdir(parents=True)
    os.chmod(tmp, 0o1777)
    usable = localns.prepare(staging / "tops", tops)
    (staging / "tops" / workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
    binds: list[tuple[str, str, bool]] = []
    if context is not None:
        binds.append((str(context.resolve()), str(tmp / CONTEXT_DIR), True))
    base_env = {**BASE_ENV, "PATH": os.environ.get("PATH", BASE_ENV["PATH"]), "HOME": f"/tmp/{HOME_DIR}",
                "HOSTNAME": os.uname().nodename}
    for step in plan.steps:
        env, cwd = base_env, "/"
        if step.op == "WORKDIR":
            argv = ["mkdir", "-p", step.dest]
        elif step.op in ("COPY", "ADD"):
            if context is None:
                raise TaskBuildError(f"Dockerfile line {step.line}: {step.op} without a build context")
            argv = ["/bin/sh", "-c", _copy_script(step, context, f"/tmp/{CONTEXT_DIR}")]
        elif step.op == "RUN":
            argv, env, cwd = step.argv, {**base_env, **step.env}, step.cwd
        else:
            continue
        wrapped = localns.wrap(argv, staging / "tops", usable, cwd, binds, private_tmp=tmp)
        result = await run_process(subprocess_spawn(wrapped, env, str(staging)), timeout_s=timeout_s, limit=output_limit)
        if result.timed_out or result.exit_code != 0:
            what = "timed out" if result.timed_out else f"exited {result.exit_code}"
            raise TaskBuildError(f"Dockerfile line {step.line}: {step.op} {what}:\n{result.output[-2000:]}")
    os.rename(tmp / HOME_DIR, staging / "home")
    shutil.rmtree(tmp, ignore_errors=True)


async def copy_template(template: Path, root: Path, tops: list[str], home: Path) -> None:
    """Copy the template's directories into a trial's root (``root/<top>``) and its home into ``home``."""
    import asyncio

    pairs = [(template / "tops" / top, root / top) for top in tops if (template / "tops" / top).is_dir()]
    pairs.append((template / "home", home))
    for src, dest in pairs:
        if not src.is_dir():
            continue
        dest.mkdir(parents=True, exist_ok=True)
        proc = await asyncio.create_subprocess_exec("cp", "-a", "--", f"{src}/.", f"{dest}/",
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise SandboxError(f"cannot copy the local build template {src} to {dest}: {out.decode(errors='replace')[-500:]}")
