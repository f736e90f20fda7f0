"""The stdio form of a trial's MCP server: a process an agent spawns as its MCP server, relaying
the JSON-RPC messages of its stdin (one a line) to the trial's streamable-HTTP endpoint and the
answers back to its stdout. ``TrialToolServer.stdio_command()`` gives its command line; the
endpoint's URL and bearer token come in the environment (``AGENTRIG_MCP_URL``,
``AGENTRIG_MCP_TOKEN``), never on the command line.

Standard library only, run as a script (``python -I bridge.py``), so that it starts in any
environment the agent gives it. ``initialize``, notifications and responses are relayed one at a
time, in order (the session id and protocol version the server answers are sent with every later
request); other requests each on their own thread, so a slow call does not hold up a ping. A
request the server cannot answer (refused, 401, closed) gets a JSON-RPC error saying why. At the
end of stdin the bridge ends the HTTP session and exits.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import threading
import urllib.parse

_TIMEOUT_S = 3600.0  # one HTTP exchange; a tool call is bounded by the trial, not here
_VERSION_META = "io.modelcontextprotocol/protocolVersion"


def _is_request(message: object) -> bool:
    return isinstance(message, dict) and "method" in message and "id" in message


class Bridge:
    def __init__(self, url: str, token: str, out=None):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"AGENTRIG_MCP_URL: not an http:// URL: {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.path = parts.path or "/"
        self.token = token
        self.out = out or sys.stdout.buffer
        self.out_lock = threading.Lock()
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.threads: list[threading.Thread] = []

    # -- stdout ---------------------------------------------------------------------------------

    def emit(self, message: object) -> None:
        line = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        with self.out_lock:
            self.out.write(line)
            self.out.flush()

    def emit_raw(self, data: str) -> None:
        data = data.strip()
        if not data:
            return
        try:
            message = json.loads(data)
        except ValueError:
            print(f"agentrig MCP bridge: the server sent a message that is not JSON: {data[:200]}", file=sys.stderr)
            return
        self.emit(message)

    def fail(self, message: dict, reason: str) -> None:
        """Answer a request the server did not answer; anything else is only reported on stderr."""
        if _is_request(message):
            self.emit({"jsonrpc": "2.0", "id": message["id"],
                       "error": {"code": -32603, "message": f"agentrig MCP bridge: {reason}"}})
        else:
            print(f"agentrig MCP bridge: {reason}", file=sys.stderr)

    # -- HTTP -----------------------------------------------------------------------------------

    def _headers(self, message: object) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        version = self.protocol_version
        if isinstance(message, dict):
            meta = (message.get("params") or {}).get("_meta") if isinstance(message.get("params"), dict) else None
            if isinstance(meta, dict) and isinstance(meta.get(_VERSION_META), str):
                version = meta[_VERSION_META]
        if version and not (isinstance(message, dict) and message.get("method") == "initialize"):
            headers["Mcp-Protocol-Version"] = version
        return headers

    def relay(self, message: object, raw: bytes) -> None:
        """POST one message; whatever the server answers (JSON or an SSE stream) goes to stdout."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=_TIMEOUT_S)
        try:
            conn.request("POST", self.path, body=raw, headers=self._headers(message))
            response = conn.getresponse()
            session = response.getheader("Mcp-Session-Id")
            if session:
                self.session_id = session
            kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if response.status >= 400:
                body = response.read().decode("utf-8", "replace")
                try:
                    answer = json.loads(body)
                except ValueError:
                    answer = None
                if isinstance(answer, dict) and answer.get("jsonrpc") and answer.get("id") is not None:
                    self.emit(answer)
                else:
                    self.fail(message, f"the trial's MCP server answered HTTP {response.status}: {body[:300]}")
                return
            if kind == "text/event-stream":
                answered = self._read_events(response, message)
            elif kind == "application/json":
                answered = self._deliver(message, json.loads(response.read() or b"null"))
            else:
                response.read()
                answered = not _is_request(message)  # a notification or a response: 202, no body
            if not answered:
                self.fail(message, f"the trial's MCP server ended its answer (HTTP {response.status}) without "
                                   "a response to this request")
        except (OSError, http.client.HTTPException) as exc:
            self.fail(message, f"the trial's MCP server cannot be reached ({type(exc).__name__}: {exc})")
        finally:
            conn.close()

    def _read_events(self, response: http.client.HTTPResponse, message: object) -> bool:
        data: list[str] = []
        answered = False
        while True:
            line = response.readline()
            if not line:
                break
            text = line.decode("utf-8").rstrip("\r\n")
            if text == "":
                if data:
                    payload = "\n".join(data)
                    data = []
                    try:
                        answered = self._deliver(message, json.loads(payload)) or answered
                    except ValueError:
                        self.emit_raw(payload)
                continue
            field, _, value = text.partition(":")
            if field == "data":
                data.append(value[1:] if value.startswith(" ") else value)
        if data:
            self.emit_raw("\n".join(data))
        return answered

    def _deliver(self, message: object, answer: object) -> bool:
        """Emit the server's ``answer``; True when it answers ``message`` (or ``message`` needs no
        answer). The protocol version of an ``initialize`` answer is kept for later requests."""
        if answer is not None:
            self.emit(answer)
        if not _is_request(message):
            return True
        if not (isinstance(answer, dict) and answer.get("id") == message.get("id")):
            return False
        if message.get("method") == "initialize":
            version = (answer.get("result") or {}).get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
        return True

    def end_session(self) -> None:
        if not self.session_id:
            return
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            conn.request("DELETE", self.path, headers=self._headers(None))
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()

    # -- the loop -------------------------------------------------------------------------------

    def run(self, stdin) -> None:
        for raw in stdin:
            raw = raw.strip()
            if not raw:
                continue
            try:
                message = json.loads(raw)
            except ValueError as exc:
                self.emit({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {exc}"}})
                continue
            if _is_request(message) and message.get("method") != "initialize":
                thread = threading.Thread(target=self.relay, args=(message, raw), daemon=True)
                thread.start()
                self.threads = [t for t in self.threads if t.is_alive()] + [thread]
            else:
                self.relay(message, raw)
        for thread in self.threads:
            thread.join(timeout=30)
        self.end_session()


def main() -> int:
    url, token = os.environ.get("AGENTRIG_MCP_URL"), os.environ.get("AGENTRIG_MCP_TOKEN")
    if not url or not token:
        print("agentrig MCP bridge: AGENTRIG_MCP_URL and AGENTRIG_MCP_TOKEN must be set "
              "(fix: start it with the command and environment of TrialToolServer.stdio_command())", file=sys.stderr)
        return 2
    try:
        bridge = Bridge(url, token)
    except ValueError as exc:
        print(f"agentrig MCP bridge: {exc}", file=sys.stderr)
        return 2
    try:
        bridge.run(sys.stdin.buffer)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
