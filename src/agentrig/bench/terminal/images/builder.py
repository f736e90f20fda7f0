"""Build a base root once with mmdebstrap, cached by its recipe's hash; list and remove them.

Layout: ``IMAGES/<key>/`` holding ``root/`` (the tree) and ``meta.json`` (the recipe).
A build goes to ``IMAGES/.build-…`` and is renamed into place when complete; builds of the same
key wait on ``IMAGES/<key>.lock`` (one builds, the others reuse it).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from ..core.base import SandboxError
from ..core.hostsettings import host_apt_options
from .model import BaseRecipe
from .ubuntu import ADD_USER, WITH_USER, fetch_ubuntu_keyring, ubuntu_sources

MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
Progress = Callable[[str], None]


def images_dir(explicit: Path | None = None) -> Path:
    """Where base roots live: `explicit`, env AGENTRIG_IMAGES_DIR, or $XDG_CACHE_HOME/agentrig/images."""
    if explicit is not None:
        return Path(explicit).expanduser()
    if os.environ.get("AGENTRIG_IMAGES_DIR"):
        return Path(os.environ["AGENTRIG_IMAGES_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentrig" / "images"


def mmdebstrap_binary() -> str:
    found = shutil.which("mmdebstrap")
    if not found:
        raise SandboxError("mmdebstrap is not installed: base images are built with it "
                           "(apt-get install mmdebstrap, or `make system-deps`)")
    return found


def root_path(recipe: BaseRecipe, cache: Path | None = None) -> Path:
    return images_dir(cache) / recipe.key()  # by key only: refs that build the same tree share it


def _sources(suite: str) -> list[str]:
    lines = [f"deb {MIRROR} {suite} main", f"deb {MIRROR} {suite}-updates main"]
    lines.append(f"deb {SECURITY} {suite}-security main")
    return lines


# Debian marks its Python EXTERNALLY-MANAGED (pip refuses to install into it); the official images'
# pip installs. The marker is diverted (dpkg-divert), so an apt-get that upgrades the interpreter in
# a task's build writes it aside too, where a plain delete would see it come back and pip refuse.
DIVERT_MARKER = ('for m in "$1"/usr/lib/python3*/EXTERNALLY-MANAGED; do [ -e "$m" ] || continue; '
                 'chroot "$1" dpkg-divert --local --rename --divert "${m#"$1"}.agentrig" --add "${m#"$1"}"; done')
# The official images' Python lives in /usr/local (sys.prefix /usr/local, its own site-packages,
# pip installed by pip) and sees none of Debian's Python libraries. Here: a virtual environment of
# Debian's interpreter made at /usr/local, without Debian's dist-packages, and pip installed into it
# from the wheel Debian ships with python3-venv (no network). apt's Python programs (asciinema) keep
# /usr/bin/python3 and their libraries; a task's `pip install` never meets them.
PYTHON_AT_LOCAL = ('chroot "$1" python3 -m venv --without-pip /usr/local || exit 1; '
                   'for w in "$1"/usr/share/python-wheels/pip-*.whl; do [ -e "$w" ] || continue; '
                   'chroot "$1" /usr/local/bin/python3 "${w#"$1"}/pip" install --no-index --no-cache-dir '
                   '--disable-pip-version-check "${w#"$1"}" || exit 1; done')



def python_packages_hook(names: list[str]) -> str:
    """Install `names` (setuptools, wheel) into the /usr/local environment from the wheels Debian
    ships in /usr/share/python-wheels (no network); a name with no wheel there fails the build."""
    wheels = " ".join(f'"$1"/usr/share/python-wheels/{name}-[0-9]*.whl' for name in names)
    return (f'set -- "$1" {wheels}; root="$1"; shift; for w; do [ -e "$w" ] || {{ echo "no wheel $w" >&2; exit 1; }}; done; '
            'chroot "$root" /usr/local/bin/python3 -m pip install --no-index --no-cache-dir --disable-pip-version-check '
            '$(for w; do printf "%s " "${w#"$root"}"; done)')


def _python_layout(root: Path, alias: str | None = None) -> None:
    """The environment at /usr/local as the official images' /usr/local: a ``python`` (venv makes
    ``python3`` and ``python3.X``, and ``python`` on most versions), no activation scripts.

    ``alias``: the real image's Python version when another stands in — its paths
    (``/usr/local/lib/python3.13``, ``/usr/local/bin/python3.13``, ``pip3.13``) lead to the stand-in's,
    so a Dockerfile step that names them (TB's broken-python removes pip from
    ``/usr/local/lib/python3.13/site-packages``) acts on the image's Python, not on nothing."""
    local_bin = root / "usr/local/bin"
    if (local_bin / "python3").exists() and not os.path.lexists(local_bin / "python"):
        os.symlink("python3", local_bin / "python")
    for script in local_bin.glob("[Aa]ctivate*"):  # venv's activation scripts: the official images have none
        script.unlink()
    if alias:
        libs = sorted(p.name for p in (root / "usr/local/lib").glob("python3.*") if not p.is_symlink())
        links = {root / "usr/local/bin" / f"python{alias}": "python3", root / "usr/local/bin" / f"pip{alias}": "pip3"}
        if libs:
            links[root / "usr/local/lib" / f"python{alias}"] = libs[0]
        for link, target in links.items():
            if (link.parent / target).exists() and not os.path.lexists(link):
                os.symlink(target, link)


def user_hook(name: str) -> str:
    """The image's user (node's ``node``): uid and gid 1000, a home, bash, as its Dockerfile makes it."""
    return (f'chroot "$1" groupadd --gid 1000 {name} && '
            f'chroot "$1" useradd --uid 1000 --gid {name} --shell /bin/bash --create-home {name}')


def locale_hook(locale: str) -> str:
    """Generate `locale` (``en_US.UTF-8``) in the root, as eclipse-temurin's Dockerfile does."""
    charset = locale.split(".", 1)[-1] if "." in locale else "UTF-8"
    return (f'echo "{locale} {charset}" >> "$1/etc/locale.gen" && '
            f'chroot "$1" locale-gen {locale} >/dev/null')


def _place(root: Path, recipe: BaseRecipe) -> None:
    """The recipe's directories (with their modes) and links: where the real image has its language.
    A link's target is a path in the root, its glob resolved there; none matching fails the build
    (the recipe names a package's path that is not there)."""
    for path, mode in recipe.dirs.items():
        where = root / path.lstrip("/")
        where.mkdir(parents=True, exist_ok=True)
        os.chmod(where, mode)
    for path, target in recipe.links.items():
        found = sorted(glob.glob(str(root / target.lstrip("/"))))
        if not found:
            raise SandboxError(f"building base image {recipe.ref}: {target} is not in the root "
                               f"(the recipe links {path} to it); its packages lay out otherwise")
        link = root / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(link):
            os.symlink("/" + os.path.relpath(found[0], root), link)


def _finish(root: Path, recipe: BaseRecipe) -> None:
    """What the real image has beyond the packages: a pip that installs, its layout, the WORKDIR."""
    if recipe.python:
        for marker in glob.glob(str(root / "usr/lib/python3*/EXTERNALLY-MANAGED")):
            os.unlink(marker)  # the official python images' pip installs into the system; so does ours
    if recipe.python_layout:
        _python_layout(root, recipe.python_alias)
    with contextlib.suppress(FileNotFoundError):  # the build's --aptopt lines (apt proxy, Recommends): never kept
        os.unlink(root / "etc/apt/apt.conf.d/99mmdebstrap")
    _place(root, recipe)
    if recipe.workdir != "/":
        (root / recipe.workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for name in ("tmp", "var/tmp"):
        (root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(root / name, 0o1777)


def build_error(lines: list[str]) -> str:
    """What to quote of a failed mmdebstrap: apt's own errors (a package no archive has, an archive
    file the mirror cannot serve: ``E: Failed to fetch … 404``), which come long before its last
    lines, and then the last lines."""
    tail = lines[-8:]
    causes = [line for line in lines[:-8] if line.startswith("E: ") and not line.startswith("E: setup failed")][:4]
    return "\n".join([*causes, *tail])


def lock_file(path: Path, cancel: threading.Event | None = None) -> int:
    """An exclusive flock; with ``cancel``, polled, and given up when it is set (``InterruptedError``):
    a run stopped by Ctrl-C does not wait for another process's build to end."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    if cancel is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if cancel.wait(0.1):
                os.close(fd)
                raise InterruptedError(f"stopped while waiting for {path}") from None


STOP_GRACE_S = 3.0  # a cancelled build not ended this long after (its own Ctrl-C) gets SIGINT from here


def _run_build(argv: list[str], cancel: threading.Event | None) -> subprocess.CompletedProcess:
    """mmdebstrap, to its end. With ``cancel`` set midway: a Ctrl-C from a terminal reached it too
    (it unmounts and removes what it made, then exits); one that has not ended ``STOP_GRACE_S``
    later gets SIGINT from here (a stop without a terminal's signal: a fatal error, a budget).
    ``InterruptedError`` is raised once it has ended."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: float | None = None
    signalled = False
    while True:
        try:
            out, err = proc.communicate(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            if cancel is None or not cancel.is_set():
                continue
            seen = seen if seen is not None else time.monotonic()
            if not signalled and time.monotonic() - seen >= STOP_GRACE_S:
                signalled = True
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
    if seen is not None or (cancel is not None and cancel.is_set()):
        raise InterruptedError("the base image build was stopped")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def ubuntu_keyring(base: Path) -> Path:
    """Ubuntu's archive keyring in `base`/keyrings, fetched once (``ubuntu.fetch_ubuntu_keyring``)."""
    target = base / "keyrings" / "ubuntu-archive-keyring.gpg"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = lock_file(target.parent / ".lock")
    try:
        if not target.is_file():
            fetch_ubuntu_keyring(target)
        return target
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _remove(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)


def ensure_base_root(recipe: BaseRecipe, progress: Progress | None = None, *, cache: Path | None = None,
                     host_settings: bool = False, cancel: threading.Event | None = None) -> Path:
    """The built root directory for `recipe`: from the cache, or built now with mmdebstrap.

    `host_settings`: pass the host's apt proxy options to the build (never stored in the root).
    Raises SandboxError when mmdebstrap is missing or the build fails (its last lines quoted).
    `cancel` (set from another thread: the run stops): the wait for another build's lock and the
    build itself end soon, with ``InterruptedError``; the partial build is removed."""
    final = root_path(recipe, cache)
    if (final / "meta.json").exists():
        return final / "root"
    final.parent.mkdir(parents=True, exist_ok=True)
    fd = lock_file(final.parent / f"{recipe.key()}.lock", cancel)
    try:
        if (final / "meta.json").exists():
            return final / "root"
        binary = mmdebstrap_binary()
        for stale in final.parent.glob(f".build-{recipe.key()}-*"):  # a build killed midway (we hold the lock)
            _remove(stale)
        staging = final.parent / f".build-{recipe.key()}-{os.getpid()}"
        staging.mkdir()
        say = progress or (lambda _m: None)
        distro = "Ubuntu" if recipe.distro == "ubuntu" else "Debian"
        say(f"building base image {recipe.ref} ({distro} {recipe.suite}, {len(recipe.packages)} packages) "
            f"with mmdebstrap; once, then cached in {final}")
        argv = [binary, "--variant=apt", "--mode=root" if os.geteuid() == 0 else "--mode=unshare", "--quiet"]
        if recipe.packages:
            argv.append("--include=" + ",".join(recipe.packages))
        if recipe.recommends:
            argv.append('--aptopt=APT::Install-Recommends "true"')
        for opt in host_apt_options() if host_settings else []:
            argv.append(f"--aptopt={opt}")
        if recipe.python_layout:
            argv += [f"--customize-hook={DIVERT_MARKER}", f"--customize-hook={PYTHON_AT_LOCAL}"]
            if recipe.python_packages:
                argv.append(f"--customize-hook={python_packages_hook(recipe.python_packages)}")
        sources = _sources(recipe.suite)
        if recipe.distro == "ubuntu":
            try:
                argv.append(f"--keyring={ubuntu_keyring(images_dir(cache))}")
            except SandboxError:
                _remove(staging)
                raise
            sources = ubuntu_sources(recipe)
            if recipe.suite in WITH_USER:
                argv.append(f"--customize-hook={ADD_USER}")
        if recipe.user:
            argv.append(f"--customize-hook={user_hook(recipe.user)}")
        for locale in recipe.locales:
            argv.append(f"--customize-hook={locale_hook(locale)}")
        argv += [recipe.suite, str(staging / "root"), *sources]
        started = time.monotonic()
        try:
            proc = _run_build(argv, cancel)
        except InterruptedError:
            _remove(staging)
            raise
        if proc.returncode != 0:
            _remove(staging)
            tail = build_error((proc.stderr or proc.stdout).strip().splitlines())
            hint = (f"\nUbuntu's archive is {recipe.mirror} ($AGENTRIG_UBUNTU_ARCHIVE): check that this machine reaches it, "
                    "or unset the variable to let Debian stand in for Ubuntu") if recipe.distro == "ubuntu" else ""
            raise SandboxError(f"building base image {recipe.ref} failed (mmdebstrap exited {proc.returncode}):\n{tail}{hint}")
        try:
            _finish(staging / "root", recipe)
        except SandboxError:
            _remove(staging)
            raise
        meta = {"recipe": recipe.model_dump(), "key": recipe.key(), "built_at": time.time(),
                "build_s": round(time.monotonic() - started, 1)}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2))
        os.rename(staging, final)
        say(f"built base image {recipe.ref} in {meta['build_s']:.0f} s")
        return final / "root"
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def list_roots(cache: Path | None = None) -> list[dict]:
    """The built roots: their directory, recipe, size on disk (bytes) and build time."""
    out = []
    base = images_dir(cache)
    for entry in sorted(base.glob("*/meta.json")) if base.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            meta = json.loads(entry.read_text())
            meta["path"] = str(entry.parent)
            out.append(meta)
    return out


def remove_roots(selector: str | None, cache: Path | None = None) -> list[str]:
    """Delete the built roots whose ref, key or directory name equals `selector` (all when None)."""
    removed = []
    for meta in list_roots(cache):
        path = Path(meta["path"])
        if selector is None or selector in (meta["recipe"]["ref"], meta["key"], path.name):
            _remove(path)
            removed.append(path.name)
    return removed
