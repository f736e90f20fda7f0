"""Talking to a container engine (podman or docker): its command line, whether it answers, and
the owner label that lets the next runner remove what a runner killed by SIGKILL left behind.

podman runs with agentrig's own containers.conf (runc, the host's ulimits), never the host's;
it needs no daemon (``podman info`` answers), docker's daemon must answer. Every container and
task image agentrig makes carries ``agentrig.owner=<pid>@<boot id>``; ``reap_orphans`` removes
those whose owner is gone.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from agentrig.owners import boot_id, owner_alive, owner_tag


async def _call(argv: list[str], timeout: float = 30) -> tuple[int, str]:
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    except OSError as exc:
        return 127, str(exc)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return 124, f"{argv[0]} did not answer within {timeout:.0f} s"
    return proc.returncode or 0, out.decode(errors="replace")


# podman reads this instead of the host's containers.conf (the host's /etc is left alone): the
# default ulimits are left to the host (runc cannot raise them here), a container's /etc/hosts
# starts from none of the host's entries (podman's default copies the host's /etc/hosts in; Docker
# writes only its own records, localhost, and the compose file's extra_hosts) and runc is the
# runtime (crun refuses hybrid cgroup hierarchies).
_PODMAN_CONF = '[containers]\ndefault_ulimits = []\nbase_hosts_file = "none"\n[engine]\nruntime = "runc"\n'


def podman_conf() -> Path:
    """agentrig's containers.conf for podman (written once per user and content, idempotently: two
    agentrig versions on one machine each read their own)."""
    import hashlib

    digest = hashlib.sha256(_PODMAN_CONF.encode()).hexdigest()[:8]
    path = Path(tempfile.gettempdir()) / f"agentrig-containers-{os.getuid()}-{digest}.conf"
    if not path.exists() or path.read_text() != _PODMAN_CONF:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_PODMAN_CONF)
        tmp.replace(path)
    return path


def engine_cli(engine: str) -> list[str]:
    """The argv prefix that runs ``engine``: podman with agentrig's containers.conf, docker as is."""
    if engine == "podman":
        return ["env", f"CONTAINERS_CONF={podman_conf()}", "podman"]
    return [engine]


async def engine_info(engine: str) -> tuple[str | None, str]:
    """(problem or None, what the runtime reports): podman needs no daemon; docker's must answer."""
    if shutil.which(engine) is None:
        return f"no {engine} client on PATH", ""
    if engine == "podman":
        fmt = "podman {{.Version.Version}}, runtime {{.Host.OCIRuntime.Name}}, cgroups {{.Host.CgroupsVersion}}, storage {{.Store.GraphDriverName}}"
        code, out = await _call([*engine_cli(engine), "info", "--format", fmt], timeout=30)
        if code != 0 or not out.strip():
            last = out.strip().splitlines()[-1] if out.strip() else code
            return f"podman is installed but `podman info` fails: {last}", ""
        return None, out.strip().splitlines()[-1]
    code, out = await _call([engine, "info", "--format", "docker {{.ServerVersion}}, runtime {{.DefaultRuntime}}, storage {{.Driver}}"], timeout=15)
    if code != 0 or not out.strip() or "docker ," in out:
        return f"{engine} client found but no daemon answers: {out.strip().splitlines()[-1] if out.strip() else code}", ""
    return None, out.strip().splitlines()[-1]


async def engine_problem(engine: str) -> str | None:
    """None when ``engine`` can run containers (podman: `podman info` answers; docker: its daemon does)."""
    return (await engine_info(engine))[0]


OWNER_LABEL = "agentrig.owner"  # "<pid>@<boot id>" of the process that started the container


# "<pid>@<boot id>" of a container's owner and whether it still runs (agentrig/owners.py)
_boot_id, _owner, _owner_alive = boot_id, owner_tag, owner_alive


def _no_grace(cli: list[str]) -> list[str]:
    """podman's `rm -f` first waits 10 s for `sleep infinity` to obey SIGTERM; docker's kills at once."""
    return ["-t", "0"] if cli[-1] == "podman" else []


_REAPED: dict[str, float] = {}  # engine command line -> when this process last reaped
REAP_EVERY_S = 60.0


async def reap_left_behind(cli: list[str]) -> None:
    """The containers, then the task images, of runners that are gone: at a process's first sandbox
    start, then at most once a minute (each is a few engine calls)."""
    key = " ".join(cli)
    if time.monotonic() - _REAPED.get(key, -REAP_EVERY_S) < REAP_EVERY_S:
        return
    _REAPED[key] = time.monotonic()
    await reap_orphans(cli)
    await reap_orphan_images(cli)


async def reap_orphans(cli: list[str]) -> list[str]:
    """Remove agentrig containers whose owner process is gone (a runner killed by SIGKILL)."""
    code, out = await _call([*cli, "ps", "-a", "--filter", f"label={OWNER_LABEL}",
                             "--format", f'{{{{.Names}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}'], 30)
    if code != 0:
        return []
    dead = [name for name, _, owner in (line.partition(" ") for line in out.splitlines() if line.strip())
            if not _owner_alive(owner.strip())]
    refused = []
    for name in dead:  # one by one: podman 4.3 stops at the first that is already gone
        code, _ = await _call([*cli, "rm", "-f", "-v", *_no_grace(cli), name], 120)
        if code != 0:
            refused.append(name)
    for name in refused:  # a trial's container whose services' containers (joined to it) went first
        await _call([*cli, "rm", "-f", "-v", *_no_grace(cli), name], 120)
    return dead


async def reap_orphan_images(cli: list[str]) -> list[str]:
    """Remove agentrig task images whose owner process is gone (after its containers: reap_orphans)."""
    code, out = await _call([*cli, "images", "--filter", f"label={OWNER_LABEL}",
                             "--format", f'{{{{.ID}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}'], 30)
    if code != 0:
        return []
    dead = sorted({ident for ident, _, owner in (line.partition(" ") for line in out.splitlines() if line.strip())
                   if not _owner_alive(owner.strip())})
    for ident in dead:
        await _call([*cli, "rmi", ident], 120)
    return dead

