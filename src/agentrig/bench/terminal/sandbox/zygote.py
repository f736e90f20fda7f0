"""The spawner inside a bwrap sandbox: every command of a trial is forked from here.

Run by path with the standard library only as a *factory* (``python -I -S zygote.py --factory
FD``, one per runner process): it imports what it needs once, then for each socket the host
sends it forks a spawner for one sandbox (a fork costs about a millisecond; starting an
interpreter and importing ctypes cost tens of milliseconds of CPU per trial). The factory reaps
its spawners (``reaper.py``, loaded by its path: the serving loop's reaping, shared with the warm
verifier's ``pytest_server.py``); a spawner ends when the host closes its socket. ``python -I -S zygote.py FD`` runs
one spawner directly.

A spawner's first message names the sandbox, its cgroups and the capabilities to keep; it opens
everything it needs on the host, enters the sandbox's namespaces (user when
there is one, ipc, uts, net, pid, mount, and its root), drops every capability outside ``CAPS``
from the bounding set, sets no-new-privs, and only then serves requests on socket FD (a
SOCK_SEQPACKET pair): ``spawn`` forks a child that joins the command's cgroup (``"0"`` written
through directory fds opened before entering), starts a new session, and execs the argv. The
child's pid (host numbering) is answered at once; its exit status is sent when it ends.

Why not ``nsenter`` + ``setpriv``: after entering the mount namespace every binary and library
comes from the agent's writable layer, so any program run there with full capabilities (even
``setpriv`` itself, through ``/etc/ld.so.preload``) could be replaced by the agent. This process
loads nothing from the sandbox: it imports all it needs before ``setns``.
"""

import ctypes
import importlib.util
import json
import os
import signal
import socket
import sys
import warnings  # noqa: F401 - os.execvpe imports it lazily; it must come from the host

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (
    0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
_libc = ctypes.CDLL(None, use_errno=True)


def _load(name):
    """A module beside this file, loaded by its path (this directory is not on sys.path under -I)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"agentrig_sandbox_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reaper = _load("reaper")  # the serving loop's reaping, shared with pytest_server.py


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _enter(pid):
    order = [("user", CLONE_NEWUSER), ("ipc", CLONE_NEWIPC), ("uts", CLONE_NEWUTS),
             ("net", CLONE_NEWNET), ("pid", CLONE_NEWPID), ("mnt", CLONE_NEWNS)]
    fds = []
    for name, flag in order:
        path = f"/proc/{pid}/ns/{name}"
        if name == "user" and os.stat(path).st_ino == os.stat("/proc/self/ns/user").st_ino:
            continue  # same user namespace (running as root): nothing to enter
        fds.append((os.open(path, os.O_RDONLY), flag, name))
    root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY)
    for fd, flag, name in fds:
        _check(_libc.setns(fd, flag), f"setns {name}")
        os.close(fd)
    os.fchdir(root)
    os.chroot(".")
    os.chdir("/")
    os.close(root)


def _drop_caps(keep, last):
    for cap in range(last + 1):
        if cap not in keep:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _child(request, fds, cgroup_fds, joined):
    try:
        os.setsid()
        pids_fd, others = cgroup_fds[0], cgroup_fds[1:]
        if pids_fd is not None and request.get("cgroup"):
            fd = os.open(f"{request['cgroup']}/cgroup.procs", os.O_WRONLY, dir_fd=pids_fd)
            os.write(fd, b"0")
            os.close(fd)
        for dir_fd in others:
            if dir_fd is not None:
                fd = os.open("cgroup.procs", os.O_WRONLY, dir_fd=dir_fd)
                os.write(fd, b"0")
                os.close(fd)
        os.write(joined, b"1")  # the reply (with our pid) waits for this: we are in our cgroups
        os.close(joined)
        out = fds[0]
        stdin = fds[1] if len(fds) > 1 else os.open("/dev/null", os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.closerange(3, 65536)
        try:
            os.chdir(request.get("cwd") or "/")
        except OSError as exc:
            os.write(2, f"sandbox: cannot enter {request.get('cwd')}: {exc.strerror}; starting in /\n".encode())
            os.chdir("/")
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execvpe(request["argv"][0], request["argv"], request["env"])
    except BaseException as exc:  # noqa: BLE001 - report and leave, never return into the server
        try:
            os.write(2, f"sandbox: cannot run {request['argv'][0]}: {exc}\n".encode())
        finally:
            os._exit(127)


def serve(sock, cgroup_fds):
    def ended(pid, status):
        sock.send(json.dumps({"exit": pid, "status": status}).encode())

    for _ in reaper.readable(sock, ended):
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
        except InterruptedError:
            continue
        if not data:
            return
        request = json.loads(data)
        joined_r, joined_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            sock.send(json.dumps({"id": request["id"], "error": str(exc)}).encode())
            pid = None
        if pid == 0:
            sock.close()
            os.close(joined_r)
            _child(request, fds, cgroup_fds, joined_w)
        os.close(joined_w)
        for fd in fds:
            os.close(fd)
        if pid:
            os.read(joined_r, 1)  # EOF if the child failed before joining: it exits 127
        os.close(joined_r)
        if pid:
            sock.send(json.dumps({"id": request["id"], "pid": pid}).encode())


def spawner(sock, last_cap):
    # Forked ahead of the sandbox's start: the first message names the sandbox to enter.
    first = sock.recv(1 << 16)
    if not first:
        return 0
    setup = json.loads(first)
    try:
        cgroup_fds = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) if p else None for p in setup["cgroups"]]
        _enter(str(setup["target"]))
        _drop_caps(set(setup["caps"]), last_cap)
    except OSError as exc:
        sock.send(json.dumps({"fatal": str(exc)}).encode())
        return 1
    sock.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    serve(sock, cgroup_fds)
    return 0


def factory(sock, last_cap):
    """Fork a spawner for each socket received; answer its pid; reap the spawners that ended."""
    signal.signal(signal.SIGCHLD, reaper.reap_all)
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, 64, 1)
        except InterruptedError:
            continue
        if not data:
            return 0
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            sock.close()
            code = 1
            try:
                code = spawner(socket.socket(fileno=fds[0]), last_cap)
            finally:
                os._exit(code)
        os.close(fds[0])


def main(argv):
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last_cap = int(handle.read())
    if argv[0] == "--factory":
        return factory(socket.socket(fileno=int(argv[1])), last_cap)
    return spawner(socket.socket(fileno=int(argv[0])), last_cap)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
