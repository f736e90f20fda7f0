"""Reach into a running bwrap sandbox's mount namespace (run as a separate process, as root).

    python nsutil.py copyin PID TARFILE DEST          extract TARFILE at DEST inside
    python nsutil.py bind PID ro|rw HOST DEST [...]   bind HOST paths at DEST inside
    python nsutil.py run PID SPEC_JSON                the verifier: its own mount namespace

Run by path (not ``-m``) with the standard library only: after ``setns`` the process sees the
sandbox's files, so everything it needs is imported and opened before it enters. Binds use the
mount API (``open_tree`` clones the host path into a detached mount, ``mount_setattr`` makes it
read-only, ``move_mount`` attaches it inside), which lets a host directory enter a namespace that
has no path back to the host. The agent's processes have no capability to undo either.

``run`` starts the verifier: it joins the command's cgroups, clones the binds, enters the
sandbox's namespaces, then unshares a *private copy* of its mount namespace, removes the paths
the spec names (``/tests``: whatever the agent left there goes) and attaches the binds there
only — the agent's processes (a loop left running) never see ``/logs/verifier`` or the bound
tests — drops capabilities like every sandboxed command, and forks the command into the
sandbox's pid namespace, passing its exit status on. ``prepare`` is everything before that fork;
the warm verifier (``pytest_server.py``) loads this file and calls it too.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import stat
import sys
import tarfile

SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
OPEN_TREE_CLONE, AT_RECURSIVE, AT_EMPTY_PATH = 1, 0x8000, 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
AT_FDCWD = -100

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _enter(pid: str) -> None:
    fd = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY)
    _check(_libc.setns(fd, CLONE_NEWNS), "setns")
    os.close(fd)
    os.chdir("/")


def _clone(host: str, readonly: bool) -> int:
    fd = _check(_libc.syscall(SYS_OPEN_TREE, AT_FDCWD, host.encode(),
                              OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE), f"open_tree {host}")
    flags = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (MOUNT_ATTR_RDONLY if readonly else 0)
    attr = _MountAttr(flags, 0, 0, 0)
    _check(_libc.syscall(SYS_MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH | AT_RECURSIVE,
                         ctypes.byref(attr), ctypes.sizeof(attr)), f"mount_setattr {host}")
    return fd


def bind(pid: str, specs: list[tuple[str, str, str]]) -> None:
    clones = [(_clone(host, mode == "ro"), os.path.isdir(host), dest) for mode, host, dest in specs]
    _enter(pid)
    for fd, is_dir, dest in clones:
        _attach(fd, is_dir, dest)


def copyin(pid: str, tar_path: str, dest: str) -> None:
    archive = tarfile.open(tar_path, "r:")  # opened (and its members read) before entering
    members = archive.getmembers()
    _enter(pid)
    os.makedirs(dest, exist_ok=True)
    if hasattr(tarfile, "fully_trusted_filter"):  # Python >= 3.11.4: say so, no warning
        archive.extractall(dest, members=members, numeric_owner=True, filter="fully_trusted")
    else:
        archive.extractall(dest, members=members, numeric_owner=True)


def prepare(pid: str, spec: dict) -> None:
    """Join the spec's cgroups, enter the sandbox's namespaces and a private copy of its mount
    namespace, remove ``spec["remove"]``, attach the binds, bound the capabilities. Children
    forked after this are in the sandbox's pid namespace."""
    for path in spec.get("cgroups", []):  # join before anything is forked
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
    clones = [(_clone(host, mode == "ro"), os.path.isdir(host), dest) for mode, host, dest in spec.get("binds", [])]
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last_cap = int(handle.read())
    namespaces = [("ipc", 0x08000000), ("uts", 0x04000000), ("net", 0x40000000), ("pid", 0x20000000)]
    fds = [(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY), flag, name) for name, flag in namespaces]
    root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY)
    for fd, flag, name in fds:
        _check(_libc.setns(fd, flag), f"setns {name}")
        os.close(fd)
    _enter(pid)
    os.fchdir(root)
    os.chroot(".")
    os.chdir("/")
    os.close(root)
    _check(_libc.unshare(CLONE_NEWNS), "unshare the mount namespace")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make the verifier's mounts private")
    for path in spec.get("remove", []):
        _remove(path)
    for fd, is_dir, dest in clones:
        _attach(fd, is_dir, dest)
    keep = set(spec["caps"])
    for cap in range(last_cap + 1):
        if cap not in keep:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _remove(path: str) -> None:
    """``rm -rf path`` (a symlink is removed, never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def set_caps(keep: list[int]) -> None:
    """Effective and permitted capabilities = `keep`, inheritable none: what ``execve`` gives a
    root process whose bounding set is `keep` (for a process that runs without an exec)."""
    low = sum(1 << c for c in keep if c < 32)
    high = sum(1 << (c - 32) for c in keep if c >= 32)
    data = (_CapData * 2)(_CapData(low, low, 0), _CapData(high, high, 0))
    _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), data), "capset")


def run(pid: str, spec_json: str) -> int:
    spec = json.loads(spec_json)
    prepare(pid, spec)
    child = os.fork()
    if child == 0:  # in the sandbox's pid namespace
        try:
            try:
                os.chdir(spec.get("cwd") or "/")
            except OSError:
                os.chdir("/")
            os.execvpe(spec["argv"][0], spec["argv"], spec["env"])
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"verifier: cannot run {spec['argv'][0]}: {exc}\n".encode())
            os._exit(127)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda n, _f: os.kill(child, n))
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _attach(fd: int, is_dir: bool, dest: str) -> None:
    if is_dir:
        os.makedirs(dest, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dest) or "/", exist_ok=True)
        if not os.path.exists(dest):
            open(dest, "a").close()
    target = os.path.realpath(dest)
    _check(_libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
           f"move_mount {dest}")


def main(argv: list[str]) -> int:
    try:
        if argv[0] == "copyin":
            copyin(argv[1], argv[2], argv[3])
        elif argv[0] == "run":
            return run(argv[1], argv[2])
        elif argv[0] == "bind":
            rest = argv[2:]
            bind(argv[1], [(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)])
        else:
            raise SystemExit(f"unknown operation {argv[0]!r}")
    except OSError as exc:
        print(f"nsutil {argv[0]}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
