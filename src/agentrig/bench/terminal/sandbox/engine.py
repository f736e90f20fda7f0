"""Talking to a container engine (podman or docker): its command line, whether it answers, and
the owner label that lets the next runner remove what a runner killed by SIGKILL left behind.

podman runs with agentrig's own containers.conf (runc, the host's ulimits), never the host's;
it needs no daemon (``podman info`` answers), docker's daemon must answer: the one ``DOCKER_HOST``
names, else the system's (``/var/run/docker.sock``), else agentrig's own that
``scripts/start-dockerd.sh`` starts (``dockerd_dir()``: its socket is used when no other is set or
present). docker builds with its classic builder (``DOCKER_BUILDKIT=0``: BuildKit needs the buildx
plugin, and its Dockerfile frontends come from a registry). Every container and task image
agentrig makes carries ``agentrig.owner=<pid>@<boot id>``; ``reap_orphans`` removes those whose
owner is gone. The two engines list labels differently (docker's ``ps`` has ``.Label "k"``, its
``images`` no labels at all): ``labelled`` reads them the same way for both.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from agentrig.owners import boot_id, owner_alive, owner_tag
from agentrig.procs import settle_process

# a cancelled engine command (a removal under way when Ctrl-C came) is given this long to finish
CANCEL_GRACE_S = 5.0


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
    except BaseException:  # cancelled: never a client left running past the event loop
        await settle_process(proc, min(timeout, CANCEL_GRACE_S))
        raise
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


def dockerd_dir() -> Path:
    """Where ``scripts/start-dockerd.sh`` keeps agentrig's own Docker daemon (its socket ``docker.sock``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "agentrig" / "dockerd"


def docker_host() -> str | None:
    """The daemon socket for docker when none is set: agentrig's own (``dockerd_dir()``) if it is
    there and neither ``DOCKER_HOST`` nor the system's socket is; else None (docker's own choice)."""
    if os.environ.get("DOCKER_HOST") or os.path.exists("/var/run/docker.sock"):
        return None
    own = dockerd_dir() / "docker.sock"
    return f"unix://{own}" if own.is_socket() else None


_DOCKER_VARS = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY",
                "DOCKER_API_VERSION")


def engine_cli(engine: str) -> list[str]:
    """The argv prefix that runs ``engine``: podman with agentrig's containers.conf; docker with its
    classic builder, on agentrig's own daemon when no other is set (``docker_host``)."""
    if engine == "podman":
        return ["env", f"CONTAINERS_CONF={podman_conf()}", "podman"]
    if engine == "docker":  # the client's own settings ride along: a trial's commands run with a bare environment
        found = docker_host()
        own = [f"{k}={os.environ[k]}" for k in _DOCKER_VARS if os.environ.get(k)]
        return ["env", "DOCKER_BUILDKIT=0", *own, *([f"DOCKER_HOST={found}"] if found else []), "docker"]
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
    code, out = await _call([*engine_cli(engine), "info", "--format",
                             "docker {{.ServerVersion}}, runtime {{.DefaultRuntime}}, storage {{.Driver}}"], timeout=15)
    if code != 0 or not out.strip() or "docker ," in out:
        last = out.strip().splitlines()[-1] if out.strip() else code
        return (f"{engine} client found but no daemon answers: {last} (start one: `dockerd`, or agentrig's own "
                "with scripts/start-dockerd.sh)"), ""
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


def labelled(cli: list[str], what: str, label: str, *, running: bool = False) -> list[tuple[str, str, str]]:
    """(id, name, value of `label`) of each container (`what` = "containers"; ``running``: only the
    running ones) or image ("images": its name ``repository:tag``, one row per name) carrying
    `label`; none when the engine does not answer. Both engines list, then ``inspect`` for the label
    (docker's ``images`` shows no labels, its ``ps`` a string)."""
    if what == "containers":
        argv, fmt = ["ps", *([] if running else ["-a"])], "{{.ID}} {{.Names}}"
    else:
        argv, fmt = ["images"], "{{.ID}} {{.Repository}}:{{.Tag}}"
    try:
        listed = subprocess.run([*cli, *argv, "--no-trunc", "--filter", f"label={label}", "--format", fmt],
                                capture_output=True, text=True, timeout=60)
        rows = [line.split(" ", 1) for line in listed.stdout.splitlines() if " " in line.strip()]
        if listed.returncode != 0 or not rows:
            return []
        ids = sorted({ident for ident, _ in rows})
        kind = "container" if what == "containers" else "image"
        inspected = subprocess.run([*cli, kind, "inspect", "--format", f'{{{{.Id}}}} {{{{index .Config.Labels "{label}"}}}}',
                                    *ids], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    values = {}
    for line in inspected.stdout.splitlines():
        ident, _, value = line.strip().partition(" ")
        values[ident.removeprefix("sha256:")] = "" if value in ("", "<no value>") else value
    return [(ident, name.strip(), values[ident.removeprefix("sha256:")]) for ident, name in rows
            if ident.removeprefix("sha256:") in values]


async def reap_orphans(cli: list[str]) -> list[str]:
    """Remove agentrig containers whose owner process is gone (a runner killed by SIGKILL)."""
    found = await asyncio.to_thread(labelled, cli, "containers", OWNER_LABEL)
    dead = [name for _, name, owner in found if not _owner_alive(owner)]
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
    found = await asyncio.to_thread(labelled, cli, "images", OWNER_LABEL)
    dead = sorted({ident for ident, _, owner in found if not _owner_alive(owner)})
    for ident in dead:
        await _call([*cli, "rmi", ident], 120)
    return dead
