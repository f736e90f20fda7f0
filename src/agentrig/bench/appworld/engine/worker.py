"""One AppWorld worker: a process in AppWorld's venv that holds one world at a time (run by ../pool.py).

    python worker.py DATA_ROOT        # DATA_ROOT holds data/ (as `appworld download data` made it)

Protocol: JSON lines. Requests come on stdin, one object a line, ``{"id": N, "op": OP, ...}``; each
gets exactly one answer line ``{"id": N, "ok": true, ...}`` or ``{"id": N, "ok": false, "error": "..."}``
on the protocol pipe. Before the first request the worker says ``{"ready": true, "pid": …,
"appworld": version, "import_s": …}``.

    open      task_id, exec_timeout_s, max_interactions, random_seed, raise_on_failure (default true;
              false for the oracle, as AppWorld's verify opens its worlds)
                                                                → instruction, supervisor, datetime,
              app_descriptions, open_s    (closes the previous world first: one world per process)
    execute   code                                              → output, exec_s
    completed                                                   → completed (the supervisor's task status)
    evaluate                                                    → success, num_tests, passes, failures,
                                                                  difficulty, eval_s
    close                                                       → (the world closed)
    ping                                                        → pid

Why a process of its own: AppWorld pins old libraries (pydantic 1, SQLAlchemy 1.4), and opening a
world changes the whole process (the clock frozen at the task's date, ``os``/``open``/``sys.exit``
patched while code runs, a SIGALRM timeout that only works on the main thread). So each worker
runs requests one at a time on its main thread, and holds one world.

The worker dies with its runner: the runner holds the write end of a pipe whose read end the worker
got (``$AGENTRIG_APPWORLD_LIFELINE``); a thread of the worker waits on it and, at its end of file
(the runner exited, or was killed by SIGKILL) or when the worker's parent is no longer the runner
(``$AGENTRIG_APPWORLD_PARENT``), kills the worker at once — even while a request runs. The
functions it uses are taken before AppWorld is imported (its safety guard patches ``os`` while
code runs).

stdout is the protocol pipe only: the worker moves fd 1 to a private descriptor at start and points
fd 1 at stderr, so that nothing AppWorld or the played code prints can corrupt an answer.
Outputs of the engine (logs, saved databases) go to a scratch root whose ``data`` is a link to
DATA_ROOT/data: the user's data directory is only read.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback

# The real clock, held where freezegun cannot reach it: while a world is open, freezegun replaces
# time.perf_counter (and every module attribute that refers to it) with the frozen task clock.
_REAL_CLOCK = (time.perf_counter,)


def _clock() -> float:
    return _REAL_CLOCK[0]()


def _protocol_pipe():
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - fd 1 is stderr now
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8")


LIFELINE_ENV, PARENT_ENV = "AGENTRIG_APPWORLD_LIFELINE", "AGENTRIG_APPWORLD_PARENT"
_OS = (os.read, os.getppid, os.getpid, os.kill, select.select)  # before AppWorld patches anything


def _die_with_parent() -> None:
    fd, parent = os.environ.pop(LIFELINE_ENV, ""), os.environ.pop(PARENT_ENV, "")
    if not fd.isdigit():
        return
    read, getppid, getpid, kill, wait = _OS
    lifeline, owner = int(fd), int(parent) if parent.isdigit() else 0

    def watch() -> None:
        while True:
            if owner and getppid() != owner:
                break  # re-parented: the runner is gone
            try:
                ready, _, _ = wait([lifeline], [], [], 1.0)
                if ready and not read(lifeline, 64):
                    break  # end of file: the runner's end is closed
            except OSError:
                break
        kill(getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def main() -> int:
    _die_with_parent()
    pipe = _protocol_pipe()
    data_root = os.path.abspath(sys.argv[1])
    scratch = tempfile.mkdtemp(prefix="world-", dir=os.environ.get("AGENTRIG_APPWORLD_SCRATCH") or None)
    os.symlink(os.path.join(data_root, "data"), os.path.join(scratch, "data"))
    os.environ["APPWORLD_ROOT"] = scratch
    os.chdir(scratch)
    started = _clock()
    try:
        import appworld
        from appworld import AppWorld
        from appworld.apps import APP_TO_DESCRIPTION
    except Exception as exc:  # noqa: BLE001 - reported, then the worker ends
        pipe.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    experiment = f"agentrig-{os.getpid()}"
    state: dict = {"world": None}

    def close() -> None:
        world = state.pop("world", None)
        state["world"] = None
        if world is not None:
            world.close()

    def op_open(req: dict) -> dict:
        close()
        t0 = _clock()
        world = AppWorld(task_id=req["task_id"], experiment_name=experiment,
                         timeout_seconds=req.get("exec_timeout_s") or None,
                         max_interactions=int(req.get("max_interactions") or 1000),
                         random_seed=req.get("random_seed", 100),
                         raise_on_failure=bool(req.get("raise_on_failure", True)))
        state["world"] = world
        task = world.task
        return {"instruction": task.instruction,
                "supervisor": {k: task.supervisor[k] for k in ("first_name", "last_name", "email", "phone_number")},
                "datetime": task.datetime.isoformat(),
                "app_descriptions": {k: APP_TO_DESCRIPTION[k] for k in task.allowed_apps if k in APP_TO_DESCRIPTION},
                "open_s": round(_clock() - t0, 6)}

    def world() -> object:
        if state.get("world") is None:
            raise RuntimeError("no world is open (send `open` first)")
        return state["world"]

    def op_execute(req: dict) -> dict:
        t0 = _clock()
        output = world().execute(req["code"])
        return {"output": output, "exec_s": round(_clock() - t0, 6)}

    def op_completed(req: dict) -> dict:
        return {"completed": bool(world().task_completed())}

    def op_evaluate(req: dict) -> dict:
        t0 = _clock()
        w = world()
        completed = bool(w.task_completed())
        tracker = w.evaluate(suppress_errors=True)
        out = tracker.to_dict(stats_only=False)
        out["completed"] = completed
        out["eval_s"] = round(_clock() - t0, 6)
        return out

    ops = {"open": op_open, "execute": op_execute, "completed": op_completed, "evaluate": op_evaluate,
           "close": lambda req: (close(), {})[1], "ping": lambda req: {"pid": os.getpid()}}
    pipe.write(json.dumps({"ready": True, "pid": os.getpid(), "appworld": appworld.__version__,
                           "import_s": round(_clock() - started, 3)}) + "\n")
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
            except ValueError:
                pipe.write(json.dumps({"id": None, "ok": False, "error": "not a JSON line"}) + "\n")
                continue
            rid = req.get("id")
            handler = ops.get(req.get("op"))
            if handler is None:
                answer = {"id": rid, "ok": False, "error": f"unknown op {req.get('op')!r}"}
            else:
                try:
                    answer = {"id": rid, "ok": True, **handler(req)}
                except Exception as exc:  # noqa: BLE001 - the engine's own error, sent back
                    answer = {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                              "trace": traceback.format_exc()[-4000:]}
            pipe.write(json.dumps(answer, default=str) + "\n")
    finally:
        try:
            close()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
        os.chdir("/")
        shutil.rmtree(scratch, ignore_errors=True)
        pipe.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # not sys.exit: IPython's exit hooks would complain about the removed scratch root
