"""The warm verifier: one process per runner that imported pytest once; each trial's tests run in a fork.

Run by path (``python -s -P pytest_server.py FD``: the cold command's flags; ``warm.py`` starts
it with a minimal environment: no key of the runner's is in it or in its memory). Before
serving it loads everything from the host: pytest, and ``nsutil.py`` and ``reaper.py`` (the serving
loop's reaping of its children, shared with ``zygote.py``) by their paths; then it plays
pytest once on a probe test in a temporary directory, so that the modules pytest imports lazily
are loaded from the host too (the probe's module and path entry are dropped afterwards).

Requests arrive on socket FD (SOCK_SEQPACKET), each with two descriptors: the verifier's output
pipe and a socket for the answers. For each the server forks a child that

1. starts a session, takes the pipe as stdout/stderr and closes every other descriptor (the
   tests run code the agent wrote; they never hold a way back to this server);
2. does what ``nsutil.py run`` does before its fork (``nsutil.prepare``): joins the command's
   cgroups, enters the sandbox's namespaces and a private copy of its mount namespace, removes
   ``/tests``, attaches the read-only binds (agentrig's Python and pytest, the staged tests),
   bounds the capabilities and sets no-new-privileges;
3. forks the tests' process into the sandbox's pid namespace, which sets its effective and
   permitted capabilities to the agent's (no ``exec`` recomputes them here), takes the
   verifier's environment (with the ``PWD``, ``OLDPWD``, ``SHLVL`` and ``_`` bash would set) and
   directory, and calls ``pytest.main`` with the arguments of the cold command (``random``
   reseeds itself after a fork; the str hash seed is the server's: see docs/terminal.md);

and passes the tests' exit status on — for a Harbor ``test.sh`` (``reward``: ``tasks/staging.RewardPlan``)
after doing what the rest of the script does with it: write the reward file as its ``echo N >
FILE`` would (this process, which the tests' code never ran in, with the script's capabilities)
and exit with the script's status. The child's pid is answered at once, its exit status when
it ends. A child that cannot do 1–2, that finds the sandbox's ``bash`` (the cold command's
first program) or another program the script runs (``mkdir``, ``rm``) missing or not the file
the image has (the agent deleted or replaced it: the cold command then runs it as Terminal-Bench
would), whose directory check fails (``strict_cwd``: the task's script would have stopped at
its ``$PWD`` check) or whose script's ``cd`` fails, exits ``COLD`` without output: the host then
runs the cold command. Any module the tests import that is not
loaded yet comes from the read-only binds, as it would for a cold interpreter.
"""

import gc
import importlib
import importlib.util
import json
import linecache
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

COLD = 201  # the child did not run pytest: the host falls back to the cold command
_HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name: str, as_name: str):
    spec = importlib.util.spec_from_file_location(as_name, os.path.join(_HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nsutil = _load("nsutil", "agentrig_verifier_nsutil")
reaper = _load("reaper", "agentrig_sandbox_reaper")  # the serving loop's reaping, shared with zygote.py

import pytest  # noqa: E402 - after nsutil: both from the host, before any request

# Modules tests commonly import: loaded from the host now rather than through the binds later.
for _name in ("subprocess", "json", "re", "pathlib", "hashlib", "csv", "gzip", "shutil", "difflib", "pprint"):
    importlib.import_module(_name)

PROBE = '''
import json, subprocess
import pytest

@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTRIG_PROBE", "1")
    (tmp_path / "x.json").write_text(json.dumps({"a": [1, 2]}))
    return tmp_path

@pytest.mark.parametrize("n", [1, 2])
def test_pass(data, n, capsys):
    print("out")
    assert json.loads((data / "x.json").read_text())["a"][n - 1] == n

def test_fail_with_diff():
    assert {"a": [1, 2, 3], "b": "xyz"} == {"a": [1, 2, 4], "b": "xyw"}

def test_raises():
    with pytest.raises(ValueError):
        int("x")
    subprocess.run(["true"], check=True)

@pytest.mark.skip(reason="probe")
def test_skip():
    pass

@pytest.mark.xfail
def test_xfail():
    assert False
'''


def _program_id(name: str, path: str | None) -> tuple[int, int, int] | None:
    """(mode, size, mtime) of the program `name` the PATH finds, or None."""
    found = shutil.which(name, path=path)
    if found is None:
        return None
    st = os.stat(found)
    return st.st_mode, st.st_size, st.st_mtime_ns


STDLIB_ZIP = next((p for p in sys.path if p.endswith(f"python{sys.version_info[0]}{sys.version_info[1]}.zip")), None)
# the programs a cold command runs before or around pytest, as the host has them (core/base.BASE_ENV's PATH)
HOST_PROGRAMS = {name: _program_id(name, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
                 for name in ("bash", "mkdir", "rm")}


def warm_up() -> None:
    saved_path, saved_cwd = list(sys.path), os.getcwd()
    with tempfile.TemporaryDirectory(prefix="agentrig-warm-") as tmp:
        probe = os.path.join(tmp, "agentrig_warm_probe.py")
        with open(probe, "w") as handle:
            handle.write(PROBE)
        null = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1), os.dup(2)
        os.dup2(null, 1)
        os.dup2(null, 2)
        try:
            os.chdir(tmp)
            pytest.main(["-p", "no:cacheprovider", f"--confcutdir={tmp}", "-c", os.devnull, "--rootdir=.", probe, "-rA"])
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in (null, *saved):
                os.close(fd)
            os.chdir(saved_cwd)
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(tmp):
                del sys.modules[name]
    sys.path[:] = saved_path
    for attr in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, attr):
            delattr(sys, attr)
    linecache.clearcache()
    tempfile.tempdir = None
    gc.collect()
    gc.freeze()  # the children share these pages instead of copying them when gc walks them


def _tests(request: dict) -> None:
    """The tests' process (in the sandbox's pid namespace): never returns."""
    code = 1
    try:
        nsutil.set_caps(request["spec"]["caps"])
        cwd = request["spec"].get("cwd") or "/"
        try:
            os.chdir(cwd)
        except OSError:
            if request.get("strict_cwd"):
                os._exit(COLD)
            cwd = "/"
            os.chdir(cwd)
        if request.get("strict_cwd") and os.getcwd() == "/":
            os._exit(COLD)
        oldpwd = request["spec"].get("cwd") or "/"
        target = (request.get("reward") or {}).get("cd")
        if target:  # test.sh's `cd DIR`: bash's PWD is the path as written; a failed cd is the script's business
            try:
                os.chdir(target)
            except OSError:
                os._exit(COLD)
            cwd, oldpwd = target, cwd
        env = dict(request["spec"]["env"])
        env.update(PWD=cwd, OLDPWD=oldpwd, SHLVL=str(request.get("shlvl", 0)), _=request.get("python") or sys.executable)
        os.environ.clear()
        os.environ.update(env)
        time.tzset()  # TZ and /etc/localtime as the sandbox has them
        # site adds site-packages and a .pth file's entries only where they exist; the sandbox
        # may lack some the host has (the interpreter's own zip entry stays, as it always does)
        sys.path[:] = [p for p in sys.path if p == STDLIB_ZIP or os.path.exists(p)]
        tempfile.tempdir = None
        importlib.invalidate_caches()
        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *request["args"]]
        code = int(pytest.main(request["args"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # noqa: BLE001 - report it as a crashed interpreter would
        try:
            os.write(2, f"verifier: {type(exc).__name__}: {exc}\n".encode())
        except OSError:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _child(request: dict, out_fd: int) -> None:
    """The forked child: enter the sandbox, fork the tests, pass their status on. Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.closerange(3, 65536)
        nsutil.prepare(str(request["target"]), request["spec"])
        reward = request.get("reward")
        path = request["spec"]["env"].get("PATH")
        expected = request.get("programs") or HOST_PROGRAMS  # the image's, as the host found them
        for name in ("bash", *(reward or {}).get("programs", [])):
            want = expected.get(name)
            if want is None or list(_program_id(name, path) or ()) != list(want):
                os._exit(COLD)
        child = os.fork()
        if child == 0:
            _tests(request)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda n, _f: os.kill(child, n))
        _, status = os.waitpid(child, 0)
    except BaseException:  # noqa: BLE001 - nothing ran: the host runs the cold command
        os._exit(COLD)
    code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    if reward is not None and not (os.WIFEXITED(status) and code == COLD):
        try:
            code = _script_end(reward, code, request["spec"]["caps"])
        except BaseException as exc:  # noqa: BLE001 - the tests ran: report, never fall back
            _say(f"verifier: {type(exc).__name__}: {exc}\n")
            code = 1
    os._exit(code)


def _say(text: str) -> None:
    try:
        os.write(2, text.encode())
    except OSError:
        pass


def _script_end(reward: dict, status: int, caps: list[int]) -> int:
    """What the rest of a Harbor test.sh does with pytest's exit status (``tasks/staging.RewardPlan``):
    write the reward file as its ``echo N > FILE`` would — by this process, which the tests'
    code never ran in, with the script's capabilities — and return the script's exit status."""
    if status != 0 and reward["failed"] is None:
        return status  # `set -e`: the script ended at the failed pytest, writing nothing
    nsutil.set_caps(caps)
    try:
        fd = os.open(reward["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # bash's `>`
        try:
            os.write(fd, (reward["passed"] if status == 0 else reward["failed"]).encode())
        finally:
            os.close(fd)
    except OSError as exc:
        _say(f"{reward['script']}: {reward['path']}: {exc.strerror}\n")
        if reward["errexit"] or reward["exit"] == "last":
            return 1
    return {"pytest": status, "zero": 0, "last": 0}[reward["exit"]]


def serve(sock: socket.socket) -> None:
    answers: dict[int, socket.socket] = {}

    def ended(pid: int, status: int) -> None:
        answer = answers.pop(pid, None)
        if answer is not None:
            try:
                answer.send(json.dumps({"exit": status}).encode())
            except OSError:
                pass
            answer.close()

    for _ in reaper.readable(sock, ended):
        try:
            data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
        except InterruptedError:
            continue
        if not data:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        out_fd, answer = fds[0], socket.socket(fileno=fds[1])
        try:
            request = json.loads(data)
            pid = os.fork()
        except (ValueError, OSError) as exc:
            try:
                answer.send(json.dumps({"error": str(exc)}).encode())
            except OSError:
                pass
            answer.close()
            os.close(out_fd)
            continue
        if pid == 0:
            _child(request, out_fd)
        os.close(out_fd)
        answers[pid] = answer
        try:
            answer.send(json.dumps({"pid": pid}).encode())
        except OSError:
            pass


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[0]))
    warm_up()
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
