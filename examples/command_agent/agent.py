"""A minimal agent of your own, run by agentrig as `agent = { kind = "command", ... }`.

It uses nothing but Python's standard library and the variables agentrig gives every agent:
OPENAI_BASE_URL and OPENAI_API_KEY (the trial's measuring proxy and its one-trial token; never
your real key), AGENTRIG_MODEL (the model [roles.agent] names). It offers the model one tool,
`shell`, runs each command it asks for, and stops when the model answers without a tool call.
Every model call it makes goes through the proxy: agentrig retries the channel's faults for it,
records each call (usage, latency, retries) and enforces the arm's limits.
"""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

TOOLS = [{"type": "function", "function": {
    "name": "shell", "description": "Run a shell command in the task's machine and see its output.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "the command"}},
                   "required": ["command"]}}}]
SYSTEM = ("You solve a task in a Linux shell. Call the shell tool with one command at a time. "
          "When the task is done, answer with a short summary and no tool call.")
MAX_TURNS = 40


def chat(messages):
    body = json.dumps({"model": os.environ["AGENTRIG_MODEL"], "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions", data=body,
                                     headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.load(answer)["choices"][0]["message"]


def main(instruction):
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": instruction}]
    for _ in range(MAX_TURNS):
        try:
            reply = chat(messages)
        except urllib.error.HTTPError as err:  # a limit or a fault agentrig could not ride out: stop
            print(f"the model endpoint answered {err.code}: {err.read()[:300]!r}", file=sys.stderr)
            return 1
        messages.append({"role": "assistant", "content": reply.get("content"), "tool_calls": reply.get("tool_calls") or []})
        if not reply.get("tool_calls"):
            print(reply.get("content") or "")
            return 0
        for call in reply["tool_calls"]:
            cmd = json.loads(call["function"]["arguments"] or "{}").get("command", "")
            done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
            output = (done.stdout + done.stderr)[-8000:] + f"\n[exit code {done.returncode}]"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    return 1


if __name__ == "__main__":
    sys.exit(main(" ".join(sys.argv[1:])))
