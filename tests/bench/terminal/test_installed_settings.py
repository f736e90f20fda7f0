"""An installed agent's own settings reach it unchanged (issue 32, item 2), and bad ones are refused
when the experiment loads.

- the command line and home agentrig writes per kind: mini's `-c` pairs and config file, Codex's
  `-c key=value` (TOML values) and its config.toml (the proxy as its one provider, the user's lines
  first), Claude Code's settings.json and extra flags; the instruction and the model only ever come
  from the environment (never spliced into the line);
- end to end: mini-swe-agent with `config_file` = its own `mini_textbased.yaml` and
  `args = ["--model-class", "litellm_textbased"]` (mini's text-based model) plays a built-in task
  in text mode (fenced actions, no tool calls) through agentrig and solves it;
- a `command` agent without `run`, a `run` on another kind, a missing `mount` or `config_file`, a
  `version` on a command agent and the `local` sandbox are one-line errors naming the field (exit 1).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from agentrig.agents.base import AgentSettings
from agentrig.agents.installed.toolroot import agents_dir
from agentrig.bench.terminal.installed import HOME_MOUNT, InstalledAgent, codex_config, command_line

from .run_support import experiment, records
from .sandbox_support import needs_root_bwrap
from .test_bash_runs import KEY_ENV, SolutionServer, _agentrig, assert_solved_once


def test_each_kinds_settings_reach_its_command_line_and_home(tmp_path):
    mini = AgentSettings(kind="mini-swe-agent", config={"agent.step_limit": 7, "model.model_kwargs.drop_params": True},
                         args=["--cost-limit", "0"])
    line = command_line(mini, "/t/bin/mini", "trajectory.json")
    assert line.startswith("exec /t/bin/mini -m \"openai/$AGENTRIG_MODEL\" -t \"$AGENTRIG_INSTRUCTION\" ")
    assert "-c mini.yaml" in line and "-c agent.step_limit=7 -c model.model_kwargs.drop_params=true" in line
    assert line.endswith(f"-o {HOME_MOUNT}/trajectory.json --cost-limit 0 > {HOME_MOUNT}/agent.log 2>&1")

    codex = AgentSettings(kind="codex", config={"model_reasoning_summary": "none", "sandbox_workspace_write.network_access": True,
                                                "notify": ["a b", "c"]})
    line = command_line(codex, "/t/bin/codex", "codex.jsonl")
    assert "-c 'model_reasoning_summary=\"none\"' -c sandbox_workspace_write.network_access=true" in line
    assert "-c 'notify=[\"a b\", \"c\"]'" in line and line.endswith('"$AGENTRIG_INSTRUCTION" '
                                                                    f"> {HOME_MOUNT}/codex.jsonl 2> {HOME_MOUNT}/agent.log")
    cfg = tomllib.loads(codex_config("m-1", "http://127.0.0.1:5/v1", 'approval_policy = "never"'))
    assert cfg["approval_policy"] == "never" and cfg["model"] == "m-1" and cfg["model_provider"] == "agentrig"
    assert cfg["model_providers"]["agentrig"] == {"name": "agentrig", "base_url": "http://127.0.0.1:5/v1",
                                                  "env_key": "OPENAI_API_KEY", "wire_api": "responses"}

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["WebFetch"]}}))
    claude = AgentSettings(kind="claude-code", config_file=str(settings), config={"cleanupPeriodDays": 1},
                           args=["--max-turns", "9"])
    line = command_line(claude, "/t/bin/claude", "claude.jsonl")
    assert '--model "$AGENTRIG_MODEL" --max-turns 9 >' in line
    home = tmp_path / "home"
    home.mkdir()
    env = InstalledAgent(claude, None).write_home(home, "m-1", "http://127.0.0.1:5")
    assert env["CLAUDE_CONFIG_DIR"] == f"{HOME_MOUNT}/claude" and env["IS_SANDBOX"] == "1"
    assert json.loads((home / "claude" / "settings.json").read_text()) == {"permissions": {"deny": ["WebFetch"]},
                                                                          "cleanupPeriodDays": 1}

    mine = AgentSettings(kind="command", run="python3 {tool}/a.py --model {model} --out {home}/x {instruction}")
    assert command_line(mine, None, None) == ('python3 /run/agentrig/tool/a.py --model "$AGENTRIG_MODEL" --out '
                                              '/run/agentrig/home/x "$AGENTRIG_INSTRUCTION" > /run/agentrig/home/agent.log 2>&1')


@pytest.mark.parametrize("agent, sandbox, says", [
    ('{ kind = "command" }', "", "needs `run`"),
    ('{ kind = "codex", run = "x" }', "", "agent.run is for kind \"command\""),
    ('{ kind = "command", run = "x", mount = "nowhere" }', "", "agent.mount"),
    ('{ kind = "command", run = "x", version = "1" }', "", "agent.version"),
    ('{ kind = "mini-swe-agent", config_file = "missing.yaml" }', "", "agent.config_file"),
    ('{ kind = "command", run = "x" }', 'kind = "local"', "[sandbox] kind = \"local\""),
])
def test_bad_external_agent_settings_are_one_line_errors(tmp_path, agent, sandbox, says):
    toml = experiment(tmp_path, "bad", f'[channel]\nmodel = "m"\n[[arms]]\nname = "a"\nagent = {agent}\n',
                      cache=tmp_path / "cache", sandbox=sandbox)
    done = _agentrig("run", toml)
    assert done.returncode == 1 and says in done.stderr and "fix:" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@needs_root_bwrap()
def test_mini_swe_agent_plays_in_text_mode_with_its_own_config_file(tmp_path):
    (textbased,) = Path(agents_dir()).glob("mini-swe-agent-*/python/lib/python3*/site-packages/minisweagent/config/"
                                           "mini_textbased.yaml")
    server = SolutionServer()
    try:
        channel = f'[channel]\nbase_url = "{server.base_url}"\napi_key_env = "{KEY_ENV}"\nmodel = "solution"\ntimeout_s = 30\n'
        arms = (f'[[arms]]\nname = "mini-text"\nagent = {{ kind = "mini-swe-agent", config_file = "{textbased}", '
                f'args = ["--model-class", "litellm_textbased"] }}\n')
        toml = experiment(tmp_path, "mini-text", channel + arms, cache=tmp_path / "cache",
                          benchmark='task_ids = ["merge-json-config"]')
        done = _agentrig("run", toml, "--json")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = Path(json.loads(done.stdout)["run_dir"])
    (rec,) = assert_solved_once(run_dir, {("mini-text", "merge-json-config", 0)})
    replies = [m for m in rec.trajectory.messages if m.role == "assistant"]
    assert replies and all("```mswea_bash_command" in (m.content or "") for m in replies)
    assert [c.id for m in replies for c in m.tool_calls] == [f"text-{i + 1}" for i in range(len(replies))]
    first = rec.trajectory.agent_requests[0]
    assert first.tools is None  # text mode: no tools offered, as mini_textbased.yaml says
    assert len(records(run_dir, valid=False)) == 0


def test_an_installed_agents_version_as_played_is_in_the_runs_snapshot(tmp_path):
    """A run of `kind = "codex"` (no version) holds the pinned version it played: a new pinned
    default is another agent, and the same command refuses to mix the two in one run."""
    from agentrig.agents.installed.toolroot import DEFAULT_VERSIONS
    from agentrig.run.experiment import load
    from agentrig.run.snapshot import comparability

    arms = ('[[arms]]\nname = "pinned"\nagent = { kind = "codex" }\n'
            '[[arms]]\nname = "other"\nagent = { kind = "codex", version = "0.150.0" }\n'
            '[[arms]]\nname = "ours"\nagent = { kind = "bash" }\n')
    toml = experiment(tmp_path, "snap", '[channel]\nmodel = "m"\n' + arms, cache=tmp_path / "cache")
    snap = comparability(load(toml, prepare=False))["arms"]
    assert snap["pinned"]["agent"]["version"] == DEFAULT_VERSIONS["codex"]
    assert snap["other"]["agent"]["version"] == "0.150.0"
    assert "version" not in snap["ours"]["agent"] and "run" not in snap["ours"]["agent"]  # as runs stored before
