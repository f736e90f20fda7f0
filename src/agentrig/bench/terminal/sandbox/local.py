"""The local "sandbox": a temporary directory on the host, no isolation at all.

Only when asked for (``[sandbox] kind = "local"``), with a warning: commands run as you, on your
machine, with your network. The task's absolute paths (``/app``, ``/tests``, ``/logs`` …) live
under the temporary root (``ROOT/app`` …): as root, every process runs in a private mount
namespace where they are bind-mounted at their absolute paths (``localns.py``), so tasks run
unchanged; otherwise they are mapped under the root — ``sandbox_path("/app")`` is the directory
commands should use — and ``AGENTRIG_ROOT`` in every command's environment names the root.
Dockerfile steps: as root, ``WORKDIR``/``COPY``/``ADD``/``RUN`` are played once per task in that
private mount namespace, into a template cached by content hash, which each trial copies
(``localbuild.py``) — the ``RUN`` steps run on this machine, unconfined like the agent's commands.
Without root, ``RUN`` steps are never executed (the task is refused with ``needs_container``);
``WORKDIR``, ``ENV`` and ``COPY``/``ADD`` of local files are honoured under the root.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import warnings
from pathlib import Path

from ..core.base import BASE_ENV, CommandResult, TaskBuildError
from ..shell import PersistentShell, close_drainers, run_process, subprocess_spawn
from ..tasks.dockerfile import BuildPlan
from . import localbuild, localns

WARNING = ("sandbox kind 'local' runs task commands directly on this machine, without any isolation "
           "(Dockerfile RUN steps too)")


class LocalSandbox:
    kind = "local"

    def __init__(self, *, plan: BuildPlan | None, context: Path | None, workdir: str, env: dict[str, str],
                 shell: str = "stateless", output_limit: int = 10_000, keep: bool = False,
                 cache_dir: Path | None = None, build_timeout_s: float = 1800.0) -> None:
        problem = localbuild.local_problem(plan, workdir)
        if problem is not None:
            raise TaskBuildError(problem.split(": ", 1)[-1], exclusion="needs_container")
        self.plan, self.context = plan, context
        self.cache_dir, self.build_timeout_s = cache_dir, build_timeout_s
        self.root = Path(tempfile.mkdtemp(prefix="agentrig-local-"))
        # private mounts (root only): the task's absolute paths at the root's directories
        self.tops: list[str] | None = None
        if localns.unavailable() is None:
            dests = [workdir] + [s.dest for s in (plan.steps if plan else []) if s.op in ("WORKDIR", "COPY", "ADD")]
            wanted = [t for t in (localns.top_of(d) for d in dests) if t] + list(localns.TOPS)
            if localns.top_of(workdir) is None:
                shutil.rmtree(self.root, ignore_errors=True)
                raise TaskBuildError(f"the local sandbox cannot place the working directory {workdir} "
                                     "(it would be the host's own)", exclusion="needs_container")
            self.tops = list(dict.fromkeys(wanted))
        self.workdir = self.sandbox_path(workdir)
        # Nothing of agentrig's own environment is passed on (keys never reach task commands).
        self.env = {**BASE_ENV, "PATH": os.environ.get("PATH", BASE_ENV["PATH"]), "HOME": str(self.root / "root"),
                    "HOSTNAME": os.uname().nodename, **env, "AGENTRIG_ROOT": str(self.root)}
        self.shell_kind, self.output_limit, self.keep = shell, output_limit, keep
        self._shell: PersistentShell | None = None
        self._drainers: set = set()

    def sandbox_path(self, path: str) -> str:
        if self.tops is not None:  # private mounts: commands see the task's own paths
            return path
        return self._host(path)

    def _host(self, path: str) -> str:
        """Where a task path lives on the host (under the root; a path already there is kept)."""
        if not path.startswith("/") or path == str(self.root) or path.startswith(str(self.root) + "/"):
            return path
        return str(self.root / path.lstrip("/"))

    def _spawn(self, argv: list[str], env: dict[str, str], binds: list[tuple[str, str, bool]] = ()):
        if self.tops is None:
            return subprocess_spawn(argv, env, self.workdir)
        return subprocess_spawn(localns.wrap(argv, self.root, self.tops, self.workdir, binds), env, str(self.root))

    async def start(self) -> None:
        warnings.warn(WARNING, stacklevel=2)
        try:
            await self._start()
        except BaseException:  # a failed build or copy leaves no temporary root behind
            await self.close()
            raise

    async def _start(self) -> None:
        if self.tops is not None:
            self.tops = localns.prepare(self.root, self.tops)
        Path(self._host(self.workdir)).mkdir(parents=True, exist_ok=True)
        (self.root / "root").mkdir(exist_ok=True)
        if self.tops is not None and self.plan is not None and localbuild.needs_template(self.plan):
            from ..core.base import SandboxSettings

            cache = self.cache_dir or SandboxSettings().resolved_cache_dir()
            template = await localbuild.ensure_template(self.plan, self.context, self.workdir, self.tops, cache,
                                                        timeout_s=self.build_timeout_s, output_limit=self.output_limit)
            await localbuild.copy_template(template, self.root, self.tops, self.root / "root")
            return
        for step in (self.plan.steps if self.plan else []):
            if step.op == "WORKDIR":
                Path(self._host(step.dest)).mkdir(parents=True, exist_ok=True)
            elif step.op in ("COPY", "ADD") and self.context is not None:
                for source in step.sources:
                    src = self.context / source.lstrip("/")
                    dest = Path(self._host(step.dest))
                    if src.is_dir():
                        shutil.copytree(src, dest, dirs_exist_ok=True, symlinks=True)
                    elif src.exists():
                        target = dest / src.name if step.dest_is_dir else dest
                        target.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(src, target)
                    else:
                        raise TaskBuildError(f"line {step.line}: {step.op} {source}: no such file")

    async def run(self, command: str, timeout_s: float, env: dict[str, str] | None = None,
                  detach_after_s: float | None = None) -> CommandResult:
        if self.shell_kind == "persistent":
            if self._shell is None:
                self._shell = PersistentShell(self._spawn(["bash", "-l"], self.env), limit=self.output_limit)
            return await self._shell.run(command, timeout_s, env, detach_after_s)
        spawn = self._spawn(["bash", "-lc", command], {**self.env, **(env or {})})
        return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, drainers=self._drainers)

    async def wait_typed_ahead(self, timeout_s: float) -> bool:
        """Wait until the commands typed ahead into the persistent shell have ended (at most `timeout_s`)."""
        return self._shell is None or await self._shell.wait_idle(timeout_s)

    async def copy_in(self, src: Path, dest: str) -> None:
        target = Path(self._host(dest))
        if Path(src).is_dir():
            await asyncio.to_thread(shutil.copytree, src, target, dirs_exist_ok=True, symlinks=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(shutil.copy2, src, target)

    async def run_verifier(self, command: str, timeout_s: float, env: dict[str, str],
                           extra_ro_binds: dict[str, str], rw_binds: dict[str, str] | None = None) -> CommandResult:
        if self.tops is not None:  # private mounts: bind them in the verifier's own namespace
            binds = [(h, i, True) for h, i in extra_ro_binds.items() if h != i]
            binds += [(h, i, False) for h, i in (rw_binds or {}).items()]
            spawn = self._spawn(["bash", "-c", command], {**self.env, **env}, binds)
            return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, drainers=self._drainers)
        for host, inside in {**extra_ro_binds, **(rw_binds or {})}.items():
            link = Path(self.sandbox_path(inside))
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.is_dir():
                shutil.rmtree(link)
            link.symlink_to(host)
        spawn = subprocess_spawn(["bash", "-c", command], {**self.env, **env}, self.workdir)
        return await run_process(spawn, timeout_s=timeout_s, limit=self.output_limit, drainers=self._drainers)

    async def close(self) -> None:
        if self._shell is not None:
            await self._shell.close()
        close_drainers(self._drainers)
        if not self.keep:
            await asyncio.to_thread(shutil.rmtree, self.root, True)
