"""The one reaper of the sandbox's serving loops (``sandbox/reaper.py``), loaded by path as the
zygote and the warm verifier's server load it: children that end are reaped and reported while the
loop serves its socket; neither script reaps on its own."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from agentrig.bench.terminal import sandbox

HERE = Path(sandbox.__file__).parent

# run by path with -I -S (as the zygote runs): the directory is not on sys.path, the module is loaded by its path
SCRIPT = r"""
import importlib.util, json, os, socket, sys
spec = importlib.util.spec_from_file_location("agentrig_sandbox_reaper", sys.argv[1])
reaper = importlib.util.module_from_spec(spec)
spec.loader.exec_module(reaper)
a, b = socket.socketpair()
ended, pids, served = {}, [], []

def on_exit(pid, status):
    ended[pid] = os.waitstatus_to_exitcode(status)
    if len(ended) == 2:
        b.send(b"done")

b.send(b"go")  # the first turn of the loop, after its SIGCHLD handler is in place
for _ in reaper.readable(a, on_exit):
    word = a.recv(16)
    served.append(word.decode())
    if word == b"go":
        for code in (3, 5):
            pid = os.fork()
            if pid == 0:
                os._exit(code)
            pids.append(pid)
    else:
        break
reaper.reap_all()
print(json.dumps({"codes": sorted(ended.values()), "same": sorted(ended) == sorted(pids), "served": served,
                  "agentrig": any(m.startswith("agentrig") for m in sys.modules)}))
"""


def test_the_loop_reaps_every_child_and_serves_its_socket():
    out = subprocess.run([sys.executable, "-I", "-S", "-c", SCRIPT, str(HERE / "reaper.py")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"codes": [3, 5], "same": True, "served": ["go", "done"], "agentrig": False}


def test_zygote_and_the_warm_verifier_share_the_one_reaper():
    # one implementation: neither script waits for its children itself, both load reaper.py by path
    for name in ("zygote.py", "pytest_server.py"):
        source = (HERE / name).read_text(encoding="utf-8")
        waits = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", None) == "waitpid" and n.args and ast.unparse(n.args[0]) == "-1"]
        assert waits == [], f"{name} reaps its children itself"
        assert "reaper.readable(" in source, name
        assert '"reaper"' in source, name
