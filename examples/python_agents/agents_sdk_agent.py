"""A τ² agent on the OpenAI Agents SDK (`openai-agents`), for
`agent = { kind = "python", entry = "agents_sdk_agent:make" }`.

The SDK runs its own tool loop: each domain tool is a `FunctionTool` whose call goes to the trial's
environment through `turn.acall_tool` (agentrig records, applies and counts it as it would a call in
a reply), and the step's reply is the run's final text. The SDK's conversation is kept between
steps (`to_input_list()`), the new user messages appended. Its model is built on an `AsyncOpenAI`
client made from the one agentrig gives (the trial's proxy and token): Chat Completions by
default, the Responses API with `api = "responses"`. Tracing is off (nothing leaves the machine).

Settings (the arm's `agent.settings`): `api` ("chat" or "responses"), `max_turns` (model calls per
step; the SDK's default of 10 is short for a step that looks several things up), `temperature`,
`instructions` (replaces the first paragraph of the system prompt).
"""

from __future__ import annotations

from typing import Any

from agents import (Agent, FunctionTool, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig,
                    Runner, set_tracing_disabled)
from openai import AsyncOpenAI

from agentrig_agent import Turn

INSTRUCTIONS = (
    "You are the support agent of the business whose policy follows, in a chat with one customer. "
    "Use your tools to look up and change things; tell the customer what you found or did in a few "
    "plain sentences. Confirm any change with the customer before making it, and stay within the policy."
)


class AgentsSdkAgent:
    def __init__(self, settings: dict, client: Any, model: str):
        set_tracing_disabled(True)
        # an async client to the same proxy, with the same token (the SDK's models are async)
        self.client = AsyncOpenAI(base_url=str(client.base_url), api_key=client.api_key, max_retries=0)
        if settings.get("api", "chat") == "responses":
            self.model = OpenAIResponsesModel(model=model, openai_client=self.client)
        else:
            self.model = OpenAIChatCompletionsModel(model=model, openai_client=self.client)
        self.instructions = settings.get("instructions") or INSTRUCTIONS
        self.max_turns = int(settings.get("max_turns", 40))
        self.model_settings = ModelSettings(temperature=settings.get("temperature"))
        self.agent: Agent | None = None
        self.turn: Turn | None = None
        self.items: list[Any] = []  # the SDK's own record of the conversation

    def _tool(self, spec: dict) -> FunctionTool:
        function = spec["function"]
        name = function["name"]

        async def invoke(_context: Any, arguments: str) -> str:
            assert self.turn is not None
            result = await self.turn.acall_tool(name, arguments or "{}")
            return result.content

        return FunctionTool(name=name, description=function.get("description") or "",
                            params_json_schema=function.get("parameters") or {"type": "object", "properties": {}},
                            on_invoke_tool=invoke, strict_json_schema=False)

    def _build(self, turn: Turn) -> Agent:
        return Agent(name="support", instructions=f"{self.instructions}\n\n## Policy\n\n{turn.policy}",
                     model=self.model, model_settings=self.model_settings,
                     tools=[self._tool(t) for t in turn.tools])

    async def respond(self, turn: Turn) -> str:
        self.turn = turn
        if self.agent is None:
            self.agent = self._build(turn)
        for message in turn.new:  # text from the customer (and, first, the greeting we said)
            if message["role"] in ("user", "assistant") and message.get("content"):
                self.items.append({"role": message["role"], "content": message["content"]})
        result = await Runner.run(self.agent, self.items, max_turns=self.max_turns,
                                  run_config=RunConfig(tracing_disabled=True))
        self.items = result.to_input_list()
        return str(result.final_output or "")

    async def close(self) -> None:
        await self.client.close()


def make(settings: dict, client: Any, model: str) -> AgentsSdkAgent:
    if client is None or not hasattr(client, "base_url"):
        raise RuntimeError("agents_sdk_agent needs the `openai` package in its interpreter (agent.python)")
    return AgentsSdkAgent(settings, client, model)
