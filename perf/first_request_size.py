"""How long is an agent's first request? Per τ² domain and tool mode, and for the bash agent.

The first request is the one every trial of a task sends before anything else: the system prompt
(agentrig's preamble, in text mode the reply format and the tool list, then the τ² policy), the
tools in native mode, the agent's greeting and the customer's first message. It must fit the
model's context window with room for the reply: when it does not, no trial can be played
(``CONTEXT_TOO_SMALL``). The figures are characters of what the channel posts (the JSON body's
messages and tools, compact separators) and an estimate in tokens at about 4 characters a token
(OpenAI's rule of thumb for English; JSON schemas tokenize denser, about 3, so the native-mode
figures run a little low). "agentrig" is what agentrig adds to τ²'s own texts (policy, tool
names, descriptions and schemas, which are the same in both modes).

    AGENTRIG_TAU2_DATA=/work/shared/tau2-data .venv/bin/python perf/first_request_size.py [--json]
"""

from __future__ import annotations

import argparse
import json
import os
from types import SimpleNamespace

from agentrig.agents import bash_prompts as bash_texts
from agentrig.agents.base import GREETING, AgentSettings
from agentrig.agents.llm import LLMAgent
from agentrig.agents.text import TextAgent, tools_text
from agentrig.bench.tau import data as tau_data
from agentrig.bench.tau.domains import get_domain
from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir, load_task

DOMAINS = ("airline", "retail", "telecom")
FIRST_MESSAGE = "Hi, I need some help with my account, please."  # the customer's first words (short)
SEP = (",", ":")


def request_chars(messages: list[dict], tools: list[dict] | None) -> int:
    """What the model reads: the messages' text, plus the tools as compact JSON (native mode)."""
    text = sum(len(m.get("content") or "") for m in messages)
    return text + (len(json.dumps(tools, ensure_ascii=False, separators=SEP)) if tools else 0)


def row(what: str, mode: str, system: str, policy: str, tool_list: str, messages: list[dict],
        tools: list[dict] | None) -> dict:
    total = request_chars(messages, tools)
    return {"what": what, "mode": mode, "system_chars": len(system), "policy_chars": len(policy),
            "tool_list_chars": len(tool_list),
            "tools_param_chars": len(json.dumps(tools, ensure_ascii=False, separators=SEP)) if tools else 0,
            "agentrig_chars": len(system) - len(policy) - len(tool_list),
            "request_chars": total, "est_tokens": round(total / 4)}


def tau2_rows(root: str | None) -> list[dict]:
    rows = []
    for domain in DOMAINS:
        spec = get_domain(domain)
        policy = tau_data.load_policy(root, domain, "default").strip()
        ctx = SimpleNamespace(spec=spec, policy=policy, channel=object())
        for mode in ("native", "text"):
            agent = (TextAgent if mode == "text" else LLMAgent)(AgentSettings(tool_mode=mode), ctx)
            system = agent.messages[0]["content"]
            greeting = json.dumps({"action": "respond", "content": GREETING}) if mode == "text" else GREETING
            messages = [*agent.messages, {"role": "assistant", "content": greeting},
                        {"role": "user", "content": FIRST_MESSAGE}]
            tool_list = tools_text(spec.agent_toolkit) if mode == "text" else ""
            rows.append(row(f"τ² {domain}", mode, system, policy, tool_list, messages,
                            agent.tools if mode == "native" else None))
    return rows


def bash_rows() -> list[dict]:
    task = load_task(builtin_tasks_dir() / "fix-python-bug")
    rows = []
    for mode in ("native", "text"):
        limits = bash_texts.limits_text(agent_timeout_s=task.agent_timeout_s, command_timeout_s=180.0,
                                        step_limit=None, command_limit=50, cost_limit=None, output_limit=10_000)
        system = bash_texts.system_prompt(bash_texts.preamble("default"), text_mode=mode == "text",
                                          workdir="/app", command_timeout_s=180.0, limits=limits)
        messages = [{"role": "system", "content": system},
                    {"role": "user", "content": bash_texts.task_prompt(task.instruction, "/app")}]
        rows.append(row("bash (fix-python-bug)", mode, system, "", "", messages,
                        [bash_texts.BASH_TOOL] if mode == "native" else None))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    root = os.environ.get("AGENTRIG_TAU2_DATA")
    rows = tau2_rows(root) + bash_rows()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    head = (f"{'agent':<23}{'mode':<7}{'system':>8}{'policy':>8}{'tool list':>10}{'agentrig':>9}{'tools':>8}"
            f"{'request':>9}{'≈tokens':>9}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['what']:<23}{r['mode']:<7}{r['system_chars']:>8,}{r['policy_chars']:>8,}{r['tool_list_chars']:>10,}"
              f"{r['agentrig_chars']:>9,}{r['tools_param_chars']:>8,}{r['request_chars']:>9,}{r['est_tokens']:>9,}")
    print("\ncharacters. system = policy + tool list (text mode) + agentrig's own text (preamble, reply format);\n"
          "tools = the `tools` parameter (native mode, compact JSON); request = every message's text + tools;\n"
          "≈tokens = request / 4.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
