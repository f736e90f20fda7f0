"""Which roles `--smoke` and `doctor --config` check, and how (issue 31, item 6).

`examples/memory_ablation.toml` configures `[roles.memory]` for its five memory arms; the baseline
arm has no memory plug-in and never calls that role, so neither check probes it for the baseline. A
role an arm does call and its smoke trial did not is probed directly the way its trials call it:
with the trial's X-Agentrig-Domain / X-Agentrig-Task headers, without which the gold endpoint
(which plays the memory role from the task's script) refuses the request.

Real τ²-bench airline data, real HTTP to the gold-scripting endpoint; `--smoke` itself through the
CLI is tests/integration/test_memory_ablation.py."""

from __future__ import annotations

from pathlib import Path

from agentrig.channel.client import Channel
from agentrig.config import ChannelConfig, ChannelSettings, RoleConfig
from agentrig.run.doctor_targets import doctor_targets
from agentrig.run.experiment import load
from agentrig.run.smoke import _probe, roles_to_check
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint
from agentrig.types import TrialKey

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory_ablation.toml"
KEY, KEY_ENV = "sk-smoke-roles-test-9f8e7d6c", "AGENTRIG_SMOKE_ROLES_KEY"


def example_copy(tmp_path: Path, data: Path) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace('domains = ["airline"]', f'domains = ["airline"]\ndata = "{data}"', 1)
    text = text.replace('# base_url = "https://gateway.example/v1"', 'base_url = "http://127.0.0.1:9/v1"', 1)
    path = tmp_path / "memory_ablation.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_role_the_arm_never_calls_is_not_checked(tmp_path, tau2_root):
    path = example_copy(tmp_path, tau2_root)
    r = load(path)
    roles = {arm.name: roles_to_check(r, arm) for arm in r.arms}
    assert roles["baseline"] == ["agent", "user"]
    assert all(roles[a] == ["agent", "user", "memory"] for a in roles if a != "baseline")
    # the doctor's --config checks the same: the memory model is used by the five memory arms only
    targets, note = doctor_targets(path, env={"OPENAI_API_KEY": "x"})
    assert note is None
    uses = sorted(u for _, _, used in targets for u in used)
    assert "baseline: memory" not in uses and "selective: memory" in uses and "baseline: agent" in uses


async def test_a_direct_probe_carries_the_trials_task_headers(tau2_root):
    gold = GoldEndpoint(tau2_root, api_key=KEY, models=("gpt-4.1",), record=True)
    with ThreadedFakeEndpoint(gold) as server:
        cfg = ChannelConfig(channel=ChannelSettings(base_url=server.base_url, api_key_env=KEY_ENV, max_attempts=1),
                            roles={"memory": RoleConfig(model="gpt-4.1")})
        async with Channel(cfg, env={KEY_ENV: KEY}) as channel:
            check = await _probe(channel, "memory", TrialKey(arm="selective", domain="airline", task_id="0", trial=0))
        sent = [q for q in server.endpoint.requests if q.path.endswith("/chat/completions")]
    assert check.status == "ok", (check.code, check.detail)
    assert len(sent) == 1 and sent[0].headers["x-agentrig-domain"] == "airline"
    assert sent[0].headers["x-agentrig-task"] == "0" and sent[0].headers["x-agentrig-arm"] == "selective"
