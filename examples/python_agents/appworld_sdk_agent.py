"""An AppWorld agent on the OpenAI Agents SDK (`openai-agents`), for
`agent = { kind = "python", entry = "appworld_sdk_agent:make" }` on an AppWorld arm.

Each step the SDK's agent is offered one tool, `execute(code)`, and stops at its first call of it
(`tool_use_behavior="stop_on_first_tool"`): that call's `code` is the step's code, which agentrig
runs in the task's world; what it printed (`turn.output`) is put back as that call's output. The SDK's
own record of the conversation is kept between steps: the task, then each `execute` call and its
real output; the instructions are ours followed by agentrig's guide to the world. A run that ends without calling
`execute` gives no code: the agent stops. The model is built on an `AsyncOpenAI` client made from the
one agentrig gives (the trial's proxy and token): Chat Completions by default, the Responses API with
`api = "responses"`. Tracing is off.

Settings (the arm's `agent.settings`): `api` ("chat" or "responses"), `temperature`, `instructions`
(replaces the first paragraph of the instructions).
"""

from __future__ import annotations

from typing import Any

from agents import (Agent, FunctionTool, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig,
                    Runner, set_tracing_disabled)
from openai import AsyncOpenAI

from agentrig_agent import AppWorldTurn, Reply

INSTRUCTIONS = (
    "You carry out the task for the person it names by running Python against the apps of their "
    "phone and computer. Each time, call the `execute` tool once with the next small piece of code; "
    "you will see what it printed before you choose the piece after it."
)
EXECUTE = {"type": "object", "properties": {"code": {"type": "string", "description": "Python code to run"}},
           "required": ["code"]}


async def _code_of_call(_context: Any, arguments: str) -> str:
    """The tool's "result" is the code itself: the run stops at this call and returns it."""
    import json

    try:
        return str(json.loads(arguments or "{}").get("code") or "")
    except ValueError:
        return ""


class AgentsSdkCoder:
    def __init__(self, settings: dict, client: Any, model: str):
        set_tracing_disabled(True)
        self.client = AsyncOpenAI(base_url=str(client.base_url), api_key=client.api_key, max_retries=0)
        if settings.get("api", "chat") == "responses":
            self.model = OpenAIResponsesModel(model=model, openai_client=self.client)
        else:
            self.model = OpenAIChatCompletionsModel(model=model, openai_client=self.client)
        self.instructions = settings.get("instructions") or INSTRUCTIONS
        self.model_settings = ModelSettings(temperature=settings.get("temperature"))
        self.items: list = []  # the SDK's record of the conversation
        self.call_id: str | None = None  # the last execute call, whose output the next step brings
        self.tool = FunctionTool(name="execute", description="Run Python code in the task's world.",
                                 params_json_schema=EXECUTE, on_invoke_tool=_code_of_call, strict_json_schema=False)

    async def respond(self, turn: AppWorldTurn) -> Reply:
        if turn.step == 0 or self.call_id is None:
            self.items = [{"role": "user", "content": turn.prompt}]
        else:  # the last call's real output, in place of the code the tool handed back
            self.items.append({"type": "function_call_output", "call_id": self.call_id, "output": turn.output or ""})
        agent = Agent(name="appworld", instructions=f"{self.instructions}\n\n{turn.guide}", tools=[self.tool],
                      model=self.model, model_settings=self.model_settings, tool_use_behavior="stop_on_first_tool")
        result = await Runner.run(agent, input=self.items, max_turns=2, run_config=RunConfig(tracing_disabled=True))
        items = result.to_input_list()
        calls = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call"]
        code = result.final_output if isinstance(result.final_output, str) else ""
        if not calls or not code.strip():
            return Reply(content=str(result.final_output or ""))  # no code: the agent stops
        self.call_id = calls[-1]["call_id"]
        self.items = [i for i in items if not (isinstance(i, dict) and i.get("type") == "function_call_output"
                                               and i.get("call_id") == self.call_id)]
        return Reply(code=code)

    async def close(self) -> None:
        await self.client.close()


def make(settings: dict, client: Any, model: str) -> AgentsSdkCoder:
    if client is None or not hasattr(client, "base_url"):
        raise RuntimeError("appworld_sdk_agent needs the `openai` package in its interpreter (agent.python)")
    return AgentsSdkCoder(settings, client, model)
