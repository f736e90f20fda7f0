"""Acceptance of issue 6 through the real stack: `examples/memory_ablation.toml` (a copy pointed at
the gold-scripting endpoint, its own process, by [channel] base_url and a key variable) →
`agentrig run` → the six arms (baseline + selective, full_bank, always_inject, advisor,
retrieval) → `agentrig compare RUN:baseline RUN:<variant>` and `agentrig analyze`.

The gold endpoint plays the memory role too (an edit that saves one note, then nothing; a decide
phase that is mostly silent and reminds deterministically), and its gold agent ignores reminders:
every arm must earn the gold's reward, so each variant differs from the baseline only in its
plug-in — which is what `compare` must report (comparable, the only differences intended:
`arm.plugins` and the memory role the plug-in calls).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_tasks
from agentrig.store.store import Store

from .test_gold_runs import KEY_ENV, GoldServer, _agentrig, _env, assert_no_key

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "memory_ablation.toml"
VARIANTS = ("selective", "full_bank", "always_inject", "advisor", "retrieval")
ARMS = ("baseline", *VARIANTS)
PURPOSES = {  # the memory model calls each variant makes per trigger
    "baseline": set(), "selective": {"memory.edit", "memory.decide"}, "full_bank": {"memory.edit"},
    "always_inject": {"memory.edit", "memory.decide"}, "advisor": {"memory.decide"}, "retrieval": {"memory.edit"},
}
SMALL_TASKS = 6
SMALL_TRIALS = 2


def _models(text: str) -> list[str]:
    return sorted(set(re.findall(r'^model = "([^"]+)"', text, re.M)))


def _sub(pattern: str, repl: str, text: str) -> str:
    out, n = re.subn(pattern, repl, text, count=1, flags=re.M)
    assert n == 1, f"examples/memory_ablation.toml: no line matches {pattern!r}; update this test's copy step"
    return out


def copy_example(dest: Path, base_url: str, root: Path, *, num_tasks: int | None, trials: int | None) -> Path:
    """The example with [channel] pointed at the local endpoint (and, for speed, fewer tasks / trials)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = _sub(r'^# base_url = "[^"]*"', f'base_url = "{base_url}"', text)  # the example leaves it to $OPENAI_BASE_URL
    text = _sub(r'^api_key_env = ".*"', f'api_key_env = "{KEY_ENV}"', text)
    text = _sub(r'^domains = \["airline"\]', f'domains = ["airline"]\ndata = "{root}"', text)
    if num_tasks is not None:
        text = _sub(r"^# num_tasks = .*$", f"num_tasks = {num_tasks}", text)
    if trials is not None:
        text = _sub(r"^trials = \d+", f"trials = {trials}", text)
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "memory_ablation.toml"
    path.write_text(text, encoding="utf-8")
    return path


def agentrig(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*_agentrig(), *args], capture_output=True, text=True, timeout=timeout, env=_env())


@pytest.fixture(scope="module")
def gold(tau2_root):
    server = GoldServer(tau2_root, "--models", ",".join(_models(EXAMPLE.read_text(encoding="utf-8"))))
    yield server
    server.stop()


def run_ablation(gold, root: Path, dest: Path, *, num_tasks: int | None, trials: int | None) -> tuple[Path, dict]:
    toml = copy_example(dest, gold.base_url, root, num_tasks=num_tasks, trials=trials)
    done = agentrig("run", str(toml), "--json")
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    assert out["status"] == "done"
    return Path(out["run_dir"]), out


def check_arms(out: dict, tasks: int, trials: int) -> None:
    assert list(out["arms"]) == list(ARMS)
    for arm, s in out["arms"].items():
        planned = tasks * trials
        assert (s["planned"], s["valid"], s["invalid"], s["missing"]) == (planned, planned, 0, 0), (arm, s)
        assert s["mean_reward"] == 1.0, (arm, s)  # the gold agent ignores reminders: the gold reward


def check_compare(run_dir: Path, tasks: int) -> None:
    for variant in VARIANTS:
        done = agentrig("compare", f"{run_dir}:baseline", f"{run_dir}:{variant}", "--json")
        assert done.returncode == 0, (variant, done.stdout[-2000:], done.stderr[-2000:])
        c = json.loads(done.stdout)
        assert (c["a"]["arm"], c["b"]["arm"]) == ("baseline", variant)
        assert c["comparable"] and c["mismatch"] == [] and c["exit_code"] == 0
        intended = {d["path"] for d in c["config"]["differences"] if d["kind"] == "intended"}
        assert intended == {"arm.plugins", "roles.memory"}, (variant, c["config"]["differences"])
        assert all(d["kind"] != "mismatch" for d in c["config"]["differences"])
        plugins = next(d for d in c["config"]["differences"] if d["path"] == "arm.plugins")
        assert plugins["a"] == [] and plugins["b"][0]["mode"] == variant
        assert c["paired"]["tasks"] == tasks and (c["paired"]["only_a"], c["paired"]["only_b"]) == (0, 0)
        assert c["metrics"]["pass^1"]["delta"] == 0.0 and c["mcnemar"]["p"] == 1.0


def check_store(run_dir: Path, trials_per_arm: int) -> None:
    with Store.open(run_dir / "trials.sqlite", create=False) as store:
        for arm in ARMS:
            recs = list(store.records(arm=arm, valid=True))
            assert len(recs) == trials_per_arm
            for rec in recs:
                traj = rec.trajectory
                triggers = [e for e in traj.events if e.kind == "memory.trigger"]
                purposes = {c.purpose for c in traj.model_calls if c.role == "memory"}
                assert purposes == PURPOSES[arm], (arm, purposes)
                if arm == "baseline":
                    assert not triggers and not traj.events
                    continue
                # interval 1: one trigger before every agent step, steps 0, 1, 2, …
                assert [e.data["step"] for e in triggers] == list(range(traj.counters["agent_steps"]))
                agent_texts = "\n".join(m.content or "" for m in traj.messages)
                for e in triggers:
                    if e.data["injected"]:  # injected into one call, never stored in the conversation
                        assert e.data["injected"] not in agent_texts
                if arm != "advisor":  # the gold memory model saved its note at the first trigger
                    first = triggers[0].data["edit"]
                    assert [c["name"] for c in first["tool_calls"]] == ["memory_save_knowledge"]
                    assert triggers[-1].data["edit"]["bank_size"]["knowledge"] == 1


def check_analysis(run_dir: Path, tasks: int) -> None:
    done = agentrig("analyze", str(run_dir), "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["arms"]["baseline"]["memory"] is None
    for variant in VARIANTS:
        m = doc["arms"][variant]["memory"]
        assert m["modes"] == [variant] and m["baseline"] == "baseline"
        assert m["triggers"] == m["agent_steps"] > 0 and m["failed_calls"] == 0
        assert m["tokens"]["memory_per_trial"] > 0 and m["tokens"]["ratio"] > 0
        assert m["ab"]["comparable"] and m["ab"]["paired"]["tasks"] == tasks
    mem = {v: doc["arms"][v]["memory"] for v in VARIANTS}
    # the scripted decide phase: silent mostly, a reminder every few triggers; always when it must
    assert 0 < mem["selective"]["injection_rate"] < 1 and 0 < mem["advisor"]["injection_rate"] < 1
    assert mem["always_inject"]["injection_rate"] == 1.0
    # the bank (one note from the first edit on) is shown before every step; retrieval shows it
    # when it shares a term with the window (BM25), which the gold's note mostly does
    assert mem["full_bank"]["injection_rate"] == 1.0 and 0.5 < mem["retrieval"]["injection_rate"] <= 1.0
    assert mem["full_bank"]["decisions"] == {"none": mem["full_bank"]["triggers"]}
    text = agentrig("analyze", str(run_dir))
    assert text.returncode == 0 and "memory arms against the baseline baseline" in text.stdout
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="memory"' in html and "Against the baseline" in html
    for variant in VARIANTS:
        assert f">{variant}</td>" in html


def test_memory_ablation_small(gold, tau2_root, tmp_path):
    tasks = min(SMALL_TASKS, len(load_tasks(tau2_root, "airline")))
    run_dir, out = run_ablation(gold, tau2_root, tmp_path, num_tasks=tasks, trials=SMALL_TRIALS)
    check_arms(out, tasks, SMALL_TRIALS)
    check_store(run_dir, tasks * SMALL_TRIALS)
    check_compare(run_dir, tasks)
    check_analysis(run_dir, tasks)
    assert_no_key(run_dir)


@pytest.mark.slow
def test_memory_ablation_whole_file(gold, tau2_root, tmp_path):
    """The example as written (every selected airline task, 4 trials), only the endpoint changed."""
    run_dir, out = run_ablation(gold, tau2_root, tmp_path, num_tasks=None, trials=None)
    config = json.loads((run_dir / "config.json").read_text())
    tasks = len(config["tasks"]["airline"])
    check_arms(out, tasks, 4)
    check_compare(run_dir, tasks)
    check_analysis(run_dir, tasks)


def test_the_smoke_check_of_the_example_passes_on_the_gold_endpoint(gold, tau2_root, tmp_path):
    """Issue 31, item 6: `--smoke` checks each arm's roles as the arm calls them. The baseline (no
    memory plug-in) never calls the memory role, so it does not probe it — its probe used to be a
    bare direct call the gold endpoint refuses (no X-Agentrig-Domain / X-Agentrig-Task headers)."""
    toml = copy_example(tmp_path, gold.base_url, tau2_root, num_tasks=None, trials=None)
    done = agentrig("run", str(toml), "--smoke", "--json")
    assert done.returncode == 0, f"--smoke failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(done.stdout)
    assert out["ok"] and [a["arm"] for a in out["arms"]] == list(ARMS)
    roles = {a["arm"]: {c["role"]: c["status"] for c in a["roles"]} for a in out["arms"]}
    assert roles["baseline"] == {"agent": "ok", "user": "ok"}
    for variant in VARIANTS:
        assert roles[variant] == {"agent": "ok", "user": "ok", "memory": "ok"}, roles[variant]
    assert "BAD_REQUEST" not in done.stdout + done.stderr
