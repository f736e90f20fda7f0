"""The consistency-guidelines loop on τ² tasks, through the real stack (issue 13 §2–§3).

The gold endpoint in noisy mode makes the agent's write step of each bikeshop task wrong with
probability 0.5 when sampled at temperature > 0, so the truth is known: reruns fork there, and
the gap (pass^1 − pass^5) is large. Then:

1. a run on the `test` split (5 reruns) → `agentrig instability` (the noisy steps are the unstable
   ones shown to the analyst) → `agentrig guidelines derive` with a scripted analyst
   (its own local endpoint, role `analyst` from the run's experiment) → a valid file whose
   provenance names the run, arm, split and source tasks; `guidelines show` renders it;
2. a run on the held-out `train` split with three arms — baseline, the derived guidelines, and
   the same guidelines relabelled as derived from the train tasks — then `agentrig compare`:
   the guidelines (which name the noisy steps' correct actions, the endpoint's obey-marker)
   shrink the gap with a CI that excludes 0; the plug-in is the only (intended) difference; the
   relabelled file triggers the leakage warning with its count, the held-out one does not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentrig.bench.tau.data import load_splits
from agentrig.plugins.guidelines.filemodel import file_sha, load, write
from agentrig.store.store import Store
from agentrig.testing._noise import Noise
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint
from agentrig.bench.tau.scripted.gold_endpoint import GoldEndpoint, GoldResponder

KEY_ENV = "AGENTRIG_T13_GUIDE_KEY"
KEY = "sk-t13guide-Rv8Kq2Lm5Xn7Wp3"
WRITES = {"book_rental", "cancel_rental", "extend_rental", "book_repair", "add_repair_service",
          "update_customer_phone"}
SPLITS = load_splits(None, "bikeshop")


def _noisy_steps() -> dict[str, tuple[int, ...]]:
    """Per bikeshop task, the index of its last write call (tasks without one are left alone)."""
    gold = GoldResponder(None)
    out = {}
    for task_id in SPLITS["base"]:
        steps = gold.script("bikeshop", task_id).steps
        writes = [i for i, s in enumerate(steps) if s.kind == "call" and s.name in WRITES]
        if writes:
            out[f"bikeshop/{task_id}"] = (writes[-1],)
    return out


NOISY = _noisy_steps()
LABELS = sorted({GoldResponder(None).script("bikeshop", k.split("/")[1]).steps[v[0]].name for k, v in NOISY.items()})


def _agentrig(*args: str, timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("agentrig")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update({KEY_ENV: KEY, "COLUMNS": "200"})
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=cwd)


def _experiment(path: Path, gold_url: str, analyst_url: str, split: str, arms: str) -> Path:
    path.write_text(f"""
name = "{path.stem}"
[benchmark]
domains = ["bikeshop"]
split = "{split}"
[run]
trials = 5
seed = 1313
concurrency = 8
dir = "{path.parent / 'runs' / path.stem}"
[channel]
base_url = "{gold_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
max_attempts = 4
backoff_base_s = 0.01
[roles.agent]
temperature = 0.7
[roles.analyst]
base_url = "{analyst_url}"
model = "analyst-model"
temperature = 0.0
""" + arms)
    return path


@pytest.fixture(scope="module")
def endpoints():
    gold = ThreadedFakeEndpoint(GoldEndpoint(None, noise=Noise(p=0.5, seed=7, steps=NOISY), api_key=KEY))
    analyst = ThreadedFakeEndpoint(api_key=KEY, models=("analyst-model",))
    gold.start()
    analyst.start()
    yield gold, analyst
    gold.stop()
    analyst.stop()


def _run(path: Path) -> Path:
    proc = _agentrig("run", path, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return Path(json.loads(proc.stdout)["run_dir"])


def test_derive_then_evaluate_on_held_out_split(tmp_path, endpoints):
    gold, analyst = endpoints
    assert len(NOISY) >= 9 and set(SPLITS["train"]) & {k.split("/")[1] for k in NOISY}

    # 1. the source run (test split) and the derivation through a scripted analyst reply
    src = _run(_experiment(tmp_path / "source.toml", gold.base_url, analyst.base_url, "test",
                           '[[arms]]\nname = "baseline"\n'))
    proc = _agentrig("instability", src, "--samples", "4", "--temperature", "0.7", "--max-steps", "8")
    assert proc.returncode == 0, proc.stderr[-3000:]
    markers = " ".join(f"<<do:{label}>>" for label in LABELS)
    reply = {"guidelines": [
        {"text": f"When the customer's request needs a change to the account, make that change with the "
                 f"tool meant for it and its real arguments before closing: {markers}",
         "rationale": "reruns that skipped or garbled the write step failed", "category": "constraint",
         "trigger": "the last write action of a request", "sources": [
             {"task": f"bikeshop/{SPLITS['test'][1]}", "trial": 0, "step": 3, "kind": "fork"}]},
        {"text": f"Double-check the customer id {SPLITS['test'][1]} before booking.",  # a leak: a task id
         "rationale": "x", "category": "strategy", "trigger": "booking"},
    ]}
    analyst.endpoint.push_reply({"content": json.dumps(reply)})
    out = tmp_path / "guidelines.json"
    # the run directory given relative to the working directory: the provenance stores it resolved
    proc = _agentrig("guidelines", "derive", os.path.relpath(src, tmp_path), "--out", out, "--from-split", "test",
                     cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    gf = load(out)
    assert [g.id for g in gf.guidelines] == ["g1"] and gf.guidelines[0].category == "constraint"
    assert len(gf.rejected) == 1 and gf.rejected[0].values == [SPLITS["test"][1]]
    pv = gf.provenance
    store = Store.open(src / "trials.sqlite")
    try:
        run_id = store.get_meta("config")["run_id"]
    finally:
        store.close()
    assert pv.run_id == run_id and pv.arm == "baseline" and pv.split == "test" and pv.benchmark == "tau2"
    assert pv.run_dir == str(src.resolve())
    assert pv.inputs.forks >= 3 and set(pv.source_tasks) <= {f"bikeshop/{t}" for t in SPLITS["test"]}
    assert pv.inputs.unstable_steps >= 3 and pv.inputs.notes == []
    assert pv.analyst.model == "analyst-model" and pv.analyst.calls == 1
    call = [r for r in analyst.endpoint.requests if r.path.endswith("/chat/completions")][-1]
    assert call.headers.get("x-agentrig-role") == "analyst"
    assert "Never copy task-specific values" in call.json["messages"][0]["content"]
    # the unstable steps shown to the analyst are the injected noisy steps (its write step)
    shown = call.json["messages"][1]["content"]
    unstable = re.findall(r"unstable decision · task (\S+) · trial \d+ · step (\d+)", shown)
    assert unstable and all(NOISY[t] == (int(step),) for t, step in unstable), unstable
    assert "rerun fork" in shown
    assert "rejected" in proc.stdout and SPLITS["test"][1] in proc.stdout
    shown = _agentrig("guidelines", "show", out, "--plain")
    assert shown.returncode == 0 and "## g1 · constraint" in shown.stdout and file_sha(out) in shown.stdout

    # an analyst that never returns the JSON asked for: derive fails (exit 1), writes no file
    analyst.endpoint.push_reply({"content": "The agent should be more careful with its write steps."})
    analyst.endpoint.push_reply({"content": "Sorry — be careful, check twice."})
    unusable = tmp_path / "unusable.json"
    proc = _agentrig("guidelines", "derive", src, "--out", unusable)
    assert proc.returncode == 1 and not unusable.exists(), proc.stdout + proc.stderr
    assert "gave no usable reply" in proc.stderr and "Traceback" not in proc.stderr

    # the same guidelines, relabelled as derived from the evaluation tasks
    leaky = tmp_path / "leaky.json"
    write(gf.model_copy(update={"provenance": pv.model_copy(update={
        "source_tasks": [f"bikeshop/{t}" for t in SPLITS["train"]]})}), leaky)

    # 2. the held-out evaluation (train split): baseline vs guidelines vs the leaky file
    arms = f"""
[[arms]]
name = "baseline"
[[arms]]
name = "guided"
plugins = [{{ kind = "guidelines", file = "{out.name}", select = "all" }}]
[[arms]]
name = "leaky"
plugins = [{{ kind = "guidelines", file = "{leaky.name}", select = "bm25", top_k = 3 }}]
"""
    ev = _run(_experiment(tmp_path / "evaluate.toml", gold.base_url, analyst.base_url, "train", arms))
    proc = _agentrig("compare", f"{ev}:baseline", f"{ev}:guided", "--json")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    gap, p1 = r["metrics"]["gap"], r["metrics"]["pass^1"]
    assert r["paired"]["tasks"] == 10 and gap["tasks"] == 10
    assert gap["a"] > 0.15 and gap["b"] == 0.0  # the noisy steps obey the guideline
    assert gap["ci"][1] < 0 and gap["significance"] == "better", gap
    assert p1["ci"][0] > 0 and p1["significance"] == "better"
    assert r["comparable"] and r["warnings"] == []
    kinds = {d["path"]: d["kind"] for d in r["config"]["differences"]}
    assert kinds == {"arm.plugins": "intended"}, kinds
    plug = next(d for d in r["config"]["differences"] if d["path"] == "arm.plugins")["b"][0]
    assert plug["file_sha"] == file_sha(out) and plug["source_run"] == run_id and plug["source_split"] == "test"

    proc = _agentrig("compare", f"{ev}:baseline", f"{ev}:leaky", "--json")
    r = json.loads(proc.stdout)
    assert len(r["warnings"]) == 1 and "derived from 10 of the 10 task(s)" in r["warnings"][0]
    assert r["metrics"]["gap"]["b"] < r["metrics"]["gap"]["a"]  # bm25 retrieval reaches the steps too
    text = _agentrig("compare", f"{ev}:baseline", f"{ev}:leaky")
    assert "WARNING" in text.stdout and "not a held-out evaluation" in text.stdout

    # the report's A/B section: the gap row and the leakage warning
    html = tmp_path / "report.html"
    proc = _agentrig("report", ev, "--out", html)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = html.read_text()
    assert "gap (pass^1 − pass^5)" in page and "not a held-out evaluation" in page

    # the plug-in's events in the trials
    store = Store.open(ev / "trials.sqlite")
    try:
        rec = next(store.records(arm="guided", valid=True))
        loaded = [e for e in rec.trajectory.events if e.kind == "guidelines.loaded"]
        assert len(loaded) == 1 and loaded[0].data["file_sha"] == file_sha(out)
        rec = next(store.records(arm="leaky", valid=True))
        assert any(e.kind == "guidelines.select" and e.data["ids"] == ["g1"] for e in rec.trajectory.events)
    finally:
        store.close()
