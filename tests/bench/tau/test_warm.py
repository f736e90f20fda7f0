"""``Benchmark.warm``: what a Ray worker loads before its first trial (τ²: every domain's policy
and parsed databases), so that its first trials do not pay for it."""

from __future__ import annotations

from pathlib import Path

from agentrig.bench.tau import state
from agentrig.run import experiment


def test_warm_parses_every_domains_databases_and_policies_once(tmp_path: Path, tau2_root: Path):
    toml = tmp_path / "exp.toml"
    toml.write_text(f"""
[benchmark]
domains = ["airline", "retail", "bikeshop"]
data = "{tau2_root}"
num_tasks = 2
[user]
kind = "scripted"
[judge]
nl_assertions = "never"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
""", encoding="utf-8")
    r = experiment.load(toml)
    state.clear_cache()
    r.cache.clear()
    r.benchmark.warm(r)
    shared = {Path(path).parent.name for path, _ in state._shared}
    assert {"airline", "retail"} <= shared, shared  # the copy-on-write bases
    assert len(state._blobs) >= 3  # and the parsed files a judge's replay copies (bikeshop's too)
    policies = {k[1] for k in r.cache["tau2"] if k[0] == "policy"}
    assert policies == {"airline", "retail", "bikeshop"}
    before = dict(state._shared)
    r.benchmark.warm(r)  # warming again parses nothing again
    assert all(state._shared[k] is v for k, v in before.items())
