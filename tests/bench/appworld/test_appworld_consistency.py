"""The consistency pipeline on AppWorld trials (issue 25 acceptance), through the real stack: the code
agent against the scripted endpoint in NOISY mode (at its action step — step 1, after logging in —
a request sampled at temperature > 0 gets idle code instead with probability 0.5: the task's change
is never made and AppWorld's evaluation fails it), AppWorld's own evaluation, then

- ``agentrig instability`` resamples every decision step of the train run: the injected steps are
  found and no other;
- ``agentrig guidelines derive`` (a scripted analyst) writes guidelines from the train run's forks
  and unstable steps, the value-leak check rejecting one that repeats a task's quoted title;
- on held-out tasks (``test_normal``), ``agentrig compare`` baseline vs the guidelines arm: the
  gap row shows the noise's gap closed (the guideline names the step, which the endpoint then
  plays right).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from agentrig.commands.instability import instability_command
from agentrig.commands.run import run_command
from agentrig.plugins.guidelines.filemodel import load
from agentrig.testing._noise import Noise
from agentrig.bench.appworld.scripted.appworld_endpoint import AppWorldEndpoint
from agentrig.testing.fake_endpoint import ThreadedFakeEndpoint

KEY_ENV = "AGENTRIG_APPWORLD_CONS_KEY"
KEY = "sk-appworld-cons-8c2e44a1"
TRAIN = ["5a1c0de_1", "6b2d1ef_1", "7c3e2fa_1"]
NOISY = {"5a1c0de_1", "7c3e2fa_1", "5a1c0de_2"}  # 6b2d1ef_1 (train) and 8d4f3ab_1 (test) never noisy
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def _agentrig(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, KEY_ENV: KEY, "COLUMNS": "200"}
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


def _experiment(path: Path, name: str, root: Path, python: Path, url: str, analyst_url: str, dataset: str,
                arms: str) -> Path:
    path.write_text(textwrap.dedent(f"""\
        name = "{name}"
        [benchmark]
        kind = "appworld"
        data = "{root}"
        dataset = "{dataset}"
        python = "{python}"
        workers = 3
        [run]
        seed = 77
        trials = 4
        concurrency = 4
        dir = "{path.parent / 'runs' / name}"
        [channel]
        base_url = "{url}"
        api_key_env = "{KEY_ENV}"
        model = "appworld-solution"
        [roles.agent]
        temperature = 0.7
        [roles.analyst]
        base_url = "{analyst_url}"
        model = "analyst-model"
        """) + textwrap.dedent(arms), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory, synthetic_root, appworld_python):
    tmp = tmp_path_factory.mktemp("aw-consistency")
    os.environ[KEY_ENV] = KEY
    noise = Noise(p=0.5, seed=9, steps={f"appworld/{t}": (1,) for t in NOISY})
    endpoint = AppWorldEndpoint(synthetic_root, api_key=KEY, noise=noise)
    analyst = ThreadedFakeEndpoint(api_key=KEY, models=("analyst-model",))
    analyst.start()
    try:
        with ThreadedFakeEndpoint(endpoint=endpoint) as served:
            base = '[[arms]]\nname = "baseline"\nagent = { kind = "llm", step_limit = 8 }\n'
            src = _experiment(tmp / "src.toml", "aw-train", synthetic_root, appworld_python, served.base_url,
                              analyst.base_url, "train", base)
            src_dir = tmp / "runs" / "aw-train"
            assert run_command(src, as_json=True, out=Console(file=io.StringIO())) == 0
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                assert instability_command(src_dir, arm=None, tasks=None, samples=6, temperature=0.7, max_steps=6,
                                           concurrency=None, only_estimate=False, as_json=True,
                                           out=Console(file=io.StringIO())) == 0
            analyst.endpoint.push_reply({"content": "```json\n" + json.dumps({"guidelines": [
                {"text": "Never finish before the change the task asks for was made by its own API call: "
                         "<<do:create_note>> <<do:delete_note>> <<do:search_notes>>",
                 "rationale": "the failed reruns printed instead of acting", "category": "strategy",
                 "trigger": "right after logging in", "sources": [{"task": "appworld/5a1c0de_1", "trial": 1,
                                                                   "step": 1, "kind": "fork"}]},
                {"text": "Name the note Groceries.", "rationale": "r", "category": "constraint", "trigger": "notes"},
            ]}) + "\n```"})
            out = tmp / "guidelines.json"
            derived = _agentrig("guidelines", "derive", src_dir, "--out", out, "--from-split", "train")
            assert derived.returncode == 0, derived.stderr[-3000:]
            arms = base + textwrap.dedent(f"""\
                [[arms]]
                name = "guided"
                agent = {{ kind = "llm", step_limit = 8 }}
                plugins = [{{ kind = "guidelines", file = "{out}", select = "all" }}]
                """)
            ev = _experiment(tmp / "ev.toml", "aw-test", synthetic_root, appworld_python, served.base_url,
                             analyst.base_url, "test_normal", arms)
            assert run_command(ev, as_json=True, out=Console(file=io.StringIO())) == 0
            compared = _agentrig("compare", f"{tmp / 'runs' / 'aw-test'}:baseline", f"{tmp / 'runs' / 'aw-test'}:guided",
                                 "--json")
            assert compared.returncode == 0, compared.stderr[-3000:]
            yield {"instability": json.loads(buf.getvalue()), "guidelines": load(out),
                   "compare": json.loads(compared.stdout)}
    finally:
        analyst.stop()
        os.environ.pop(KEY_ENV, None)


def test_instability_finds_the_injected_steps(lab):
    (report,) = lab["instability"]["reports"]
    found = {(t["task_id"], s) for t in report["tasks"] for s in t["unstable_steps"]}
    injected = {(t, 1) for t in NOISY if t in TRAIN}
    assert found == injected, found
    stable = next(t for t in report["tasks"] if t["task_id"] == "6b2d1ef_1")
    assert stable["instability"] == 0.0 and stable["fork_step"] is None


def test_guidelines_are_derived_from_the_train_run(lab):
    gf = lab["guidelines"]
    assert gf.provenance.benchmark == "appworld" and gf.provenance.split == "train"
    assert [g.text[:20] for g in gf.guidelines] == ["Never finish before "]
    assert gf.rejected and "Groceries" in gf.rejected[0].values
    assert set(gf.provenance.source_tasks) <= {f"appworld/{t}" for t in TRAIN}


def test_held_out_gap_row_shows_the_gap_closed(lab):
    r = lab["compare"]
    gap = r["metrics"]["gap"]
    assert gap["tasks"] == 2 and gap["a"] > 0 and gap["b"] == 0.0, gap
    assert r["metrics"]["pass^1"]["b"] == 1.0 and r["warnings"] == []
    assert {d["path"] for d in r["config"]["differences"]} == {"arm.plugins"}
