"""The noisy mode of the scripted endpoints (issue 13 §4): which requests get a wrong action, that
the draw is repeatable, and that a guideline's obey-marker in a system message restores the
correct action. Replies are asked of the responders directly and through a real local server."""

from __future__ import annotations

import httpx
import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.testing._noise import Noise, obeys, parse_noise_args
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import NOISE_TEXT, GoldEndpoint, GoldScript
from agentrig.bench.terminal.scripted.solution_endpoint import NOISE_COMMAND, SolutionScript, step_label

TASK = "rent_city_bike"  # gold steps: find_customer_by_email, get_customer_details, search…, book_rental, info


def _script() -> GoldScript:
    task = next(t for t in load_tasks(None, "bikeshop") if t.id == TASK)
    return GoldScript.from_task("bikeshop", task)


def _played(script: GoldScript, n: int) -> list[dict]:
    """The agent's request after ``n`` correct gold steps (assistant calls and their results)."""
    msgs = [{"role": "system", "content": "policy"}, {"role": "assistant", "content": "Hi! How can I help you today?"},
            {"role": "user", "content": "hello"}]
    for i, step in enumerate(script.steps[:n]):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": step.name, "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    return msgs


def test_only_sampled_requests_at_the_chosen_steps_are_noisy_and_the_draw_repeats():
    script = _script()
    noise = Noise(p=0.5, seed=1, steps={f"bikeshop/{TASK}": (3,)})
    msgs = _played(script, 3)
    right = script.agent_reply(msgs)
    assert right["tool_calls"][0]["name"] == "book_rental"
    draws = [script.agent_reply(msgs, noise, {"temperature": 0.7, "seed": s}) for s in range(200)]
    wrong = [d for d in draws if d != right]
    assert 60 < len(wrong) < 140  # p = 0.5
    assert all(d["tool_calls"][0]["name"] == "book_rental" and d["tool_calls"][0]["arguments"] != right["tool_calls"][0]["arguments"]
               for d in wrong)
    assert draws == [script.agent_reply(msgs, noise, {"temperature": 0.7, "seed": s}) for s in range(200)]
    assert all(script.agent_reply(msgs, noise, {"temperature": 0, "seed": s}) == right for s in range(50))
    assert all(script.agent_reply(msgs, noise, {"seed": s}) == right for s in range(50))
    other = _played(script, 2)  # step 2 is not noisy
    assert all(script.agent_reply(other, noise, {"temperature": 1.0, "seed": s}) == script.agent_reply(other)
               for s in range(50))
    text_noise = Noise(p=1.0, steps={TASK: (4,)})  # the closing text step, keyed by the bare task id
    assert script.agent_reply(_played(script, 4), text_noise, {"temperature": 0.5, "seed": 0}) == {"content": NOISE_TEXT}


def test_a_guideline_naming_the_correct_action_is_obeyed():
    script = _script()
    noise = Noise(p=1.0, steps={"*": (3, 4)})
    body = {"temperature": 0.5, "seed": 3}
    msgs = _played(script, 3)
    assert script.agent_reply(msgs, noise, body) != script.agent_reply(msgs)
    guided = msgs + [{"role": "system", "content": "Guideline: before booking, <<do:book_rental>> once."}]
    assert script.agent_reply(guided, noise, body) == script.agent_reply(msgs)
    in_user = msgs + [{"role": "user", "content": "<<do:book_rental>>"}]  # only system messages count
    assert script.agent_reply(in_user, noise, body) != script.agent_reply(msgs)
    wrong_label = msgs + [{"role": "system", "content": "<<do:cancel_rental>>"}]
    assert script.agent_reply(wrong_label, noise, body) != script.agent_reply(msgs)
    closing = _played(script, 4) + [{"role": "system", "content": "<<do:info>>"}]
    assert script.agent_reply(closing, noise, body) == script.agent_reply(_played(script, 4))
    assert obeys([{"role": "system", "content": [{"type": "text", "text": "x <<do:a_b>> y"}]}], "a_b")


def test_the_solution_endpoint_noise_and_its_labels():
    script = SolutionScript("t", ("mkdir -p /app/d", "echo ok > /app/d/out.txt"))
    noise = Noise(p=1.0, steps={"terminal/t": (1, 2)})
    body = {"temperature": 0.5, "seed": 1}
    one = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}]
    assert script.agent_reply([], True, noise=noise, body=body)["tool_calls"][0]["arguments"]["command"] == "mkdir -p /app/d"
    assert script.agent_reply(one, True, noise=noise, body=body)["tool_calls"][0]["arguments"]["command"] == NOISE_COMMAND
    guided = [{"role": "system", "content": "<<do:echo>>"}, *one]
    assert script.agent_reply(guided, True, noise=noise, body=body)["tool_calls"][0]["arguments"]["command"].startswith("echo ok")
    assert step_label("echo ok > x") == "echo" and step_label("x", submit=True) == "submit"


def test_through_a_real_server_and_the_command_line_spec():
    noise = Noise(p=1.0, steps={f"bikeshop/{TASK}": (0,)})
    ep = GoldEndpoint(None, api_key="k", noise=noise)
    with ThreadedFakeEndpoint(endpoint=ep) as served:
        headers = {"Authorization": "Bearer k", "X-Agentrig-Role": "agent", "X-Agentrig-Domain": "bikeshop",
                   "X-Agentrig-Task": TASK}
        body = {"model": "gold", "messages": [{"role": "system", "content": "p"}, {"role": "user", "content": "hi"}]}
        calm = httpx.post(f"{served.base_url}/chat/completions", json=body, headers=headers).json()
        hot = httpx.post(f"{served.base_url}/chat/completions", json={**body, "temperature": 0.9, "seed": 2},
                         headers=headers).json()
    calm_args = calm["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    hot_args = hot["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert calm_args != hot_args and "noise-" in hot_args

    class Args:
        noise, noise_p, noise_seed = ["bikeshop/a=1,2", "b=0"], 0.3, 4

    assert parse_noise_args(Args) == Noise(p=0.3, seed=4, steps={"bikeshop/a": (1, 2), "b": (0,)})
    Args.noise = ["a=x"]
    assert "TASK=STEPS" in parse_noise_args(Args)
    with pytest.raises(ValueError):
        Noise(p=2.0)


def test_the_command_line_serves_the_noise():
    import os

    from tests.support import EndpointProcess

    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    proc = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--no-auth", "--noise", f"bikeshop/{TASK}=0", "--noise-p", "1", env=env)
    try:
        headers = {"X-Agentrig-Role": "agent", "X-Agentrig-Domain": "bikeshop", "X-Agentrig-Task": TASK}
        body = {"model": "gold", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5, "seed": 1}
        hot = httpx.post(f"{proc.base_url}/chat/completions", json=body, headers=headers).json()
        assert "noise-" in hot["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    finally:
        proc.stop()
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "agentrig.bench.terminal.scripted.solution_endpoint", "--no-auth", "--noise", "t=x"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and "TASK=STEPS" in res.stderr and "Traceback" not in res.stderr
