"""`[run] executor = "ray"` on a real local Ray cluster (a head and one more worker node, started
with `ray start`): the same rewards as the local executor for shared τ² tasks and built-in terminal
tasks, the endpoint's bound held cluster-wide, a worker SIGKILLed mid-trial → `worker_lost`,
replayed, every trial stored valid exactly once, and no key in Ray's session directory.

The worker node does not share the driver's files: it runs in a mount namespace where the τ² data,
the built-in terminal tasks and the tests' temporary directories are empty (tests/run/ray_cluster.py),
with a HOME of its own; its trials read the task files the driver shipped through the object store."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
import zlib
from collections import Counter
from pathlib import Path

import pytest

from agentrig.store.store import Store

from tests.support import EndpointProcess

KEY_ENV = "AGENTRIG_RAY_RUN_KEY"
KEY = "sk-rayrun-Pw7Xc2Nv8Kq4Zt6Lm3Hd"
AGENTRIG = str(Path(sys.executable).with_name("agentrig"))


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENTRIG_RAY", "RAY_"))}
    env.update({KEY_ENV: KEY, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}, **extra)
    return env


def _agentrig(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([AGENTRIG, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=env or _env())


def _run(toml: Path) -> dict:
    done = _agentrig("run", toml, "--json")
    assert done.returncode == 0, f"agentrig run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def rows(run_dir: str | Path) -> list:
    store = Store.open(Path(run_dir) / "trials.sqlite")
    try:
        return list(store.records())
    finally:
        store.close()


def rewards(run_dir: str | Path) -> dict[tuple, float]:
    return {(r.key.arm, r.key.domain, r.key.task_id, r.key.trial): r.verdict.reward
            for r in rows(run_dir) if r.verdict.valid}


def stats(base_url: str) -> dict:
    root = base_url.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(f"{root}/_fake/stats", timeout=10) as resp:
        return json.loads(resp.read())


def reset(base_url: str) -> None:
    root = base_url.rsplit("/v1", 1)[0]
    urllib.request.urlopen(urllib.request.Request(f"{root}/_fake/reset", data=b"{}", method="POST"), timeout=10)


def tau_experiment(path: Path, base_url: str, root: Path, *, executor: str, address: str = "auto",
                   trials: int = 2, max_concurrency: int = 2) -> Path:
    path.write_text(f"""
name = "{path.stem}"
[benchmark]
data = "{root}"
domains = ["airline", "retail"]
task_ids = {{ airline = ["0", "1", "12"], retail = ["0", "1"] }}
[run]
trials = {trials}
seed = 4242
concurrency = 6
max_invalid_retries = 3
executor = "{executor}"
ray_address = "{address}"
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "gold"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
max_concurrency = {max_concurrency}
[[arms]]
name = "gold-llm"
agent = {{ kind = "llm", tool_mode = "native" }}
""", encoding="utf-8")
    return path


def terminal_experiment(path: Path, base_url: str, cache: Path, *, executor: str, address: str = "auto") -> Path:
    path.write_text(f"""
name = "{path.stem}"
[benchmark]
kind = "terminal"
task_ids = ["write-marker", "word-frequency", "stale-lock"]
[sandbox]
cache_dir = "{cache}"
[run]
trials = 1
seed = 300
concurrency = 3
executor = "{executor}"
ray_address = "{address}"
[channel]
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
model = "solution"
timeout_s = 30
max_attempts = 12
backoff_base_s = 0.01
backoff_max_s = 0.1
[[arms]]
name = "native"
agent = {{ kind = "bash", tool_mode = "native" }}
""", encoding="utf-8")
    return path


def assert_no_key(files: list[Path]) -> None:
    needles = [KEY.encode(), KEY[9:25].encode()]
    assert files
    for p in files:
        try:
            raw = p.read_bytes()
        except OSError:
            continue
        assert not any(n in raw for n in needles), f"the API key (or a piece of it) is in {p}"
        if p.name.endswith(".sqlite"):
            conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                for (blob,) in conn.execute("SELECT record FROM trials"):
                    assert not any(n in zlib.decompress(blob) for n in needles), f"the key is in a record of {p}"
            finally:
                conn.close()


# ------------------------------------------------------------------------- settings (no cluster)


def test_bad_executor_settings_and_a_missing_ray_are_one_message_each(tmp_path):
    base = '[benchmark]\ndomains = ["bikeshop"]\n[user]\nkind = "scripted"\n[judge]\nnl_assertions = "never"\n[[arms]]\nname = "g"\nagent = { kind = "gold" }\n'
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\nexecutor = "dask"\nray_address = "somewhere"\n' + base)
    done = _agentrig("run", bad)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "run.executor: Input should be 'local' or 'ray'" in done.stderr
    assert "run.ray_address: ray_address 'somewhere' is not a Ray address" in done.stderr
    # Ray not importable (a package named ray that fails to import, first on the path)
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no ray here')\n")
    good = tmp_path / "ray.toml"
    good.write_text('[run]\nexecutor = "ray"\n' + base)
    done = _agentrig("run", good, env=_env(PYTHONPATH=str(fake.parent)))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "pip install 'agentrig[ray]'" in done.stderr and "run.executor" in done.stderr
    assert not (tmp_path / "runs").exists()  # refused before any run directory
    # no cluster at the address: one message naming the setting, at once (Ray itself would retry)
    from tests.run.ray_cluster import free_port

    nobody = tmp_path / "nobody.toml"
    nobody.write_text(f'[run]\nexecutor = "ray"\nray_address = "127.0.0.1:{free_port()}"\n' + base)
    done = _agentrig("run", nobody, timeout=120)
    if "pip install 'agentrig[ray]'" not in done.stderr:  # (Ray installed)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "run.ray_address = '127.0.0.1:" in done.stderr and "nothing answers there" in done.stderr


# ------------------------------------------------------------------------------ on a cluster


@pytest.fixture(scope="module")
def cluster(tau2_root, tmp_path_factory):
    try:
        import ray  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("Ray is not installed; `make test` installs it (pip install -e '.[test,ray]')")
        pytest.skip("Ray is not installed (pip install 'agentrig[ray]')")
    from agentrig.bench.terminal.images import images_dir
    from agentrig.bench.terminal.tasks.taskfile import builtin_tasks_dir
    from tests.run.ray_cluster import LocalCluster

    # the nodes never see the key (it comes with the job); the worker node sees none of the task files.
    # The base roots are the machine's, built once (as `agentrig images build` on a node makes them
    # before its first terminal trial): with the worker node's HOME alone, every session built TB's
    # ubuntu root there with mmdebstrap (a minute of both cores); its layers stay its own
    c = LocalCluster(_env(**{KEY_ENV: "", "AGENTRIG_IMAGES_DIR": str(images_dir())}),
                     hide=[tau2_root, builtin_tasks_dir(), tmp_path_factory.getbasetemp()])
    yield c
    left = c.stop()
    assert not left, f"Ray processes left running: {left}"


@pytest.fixture(scope="module")
def gold(tau2_root):
    server = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root), "--api-key-env", KEY_ENV,
                             "--delay-ms", "20", env=_env())
    yield server
    server.stop()


@pytest.mark.slow
def test_cluster_runs_give_the_local_rewards_within_the_endpoint_bound_and_leak_no_key(
        cluster, gold, tau2_root, tmp_path):
    local = _run(tau_experiment(tmp_path / "tau-local.toml", gold.base_url, tau2_root, executor="local"))
    reset(gold.base_url)
    on_ray = _run(tau_experiment(tmp_path / "tau-ray.toml", gold.base_url, tau2_root, executor="ray",
                                 address=cluster.address))
    peak = stats(gold.base_url)["max_in_flight"]
    assert local["status"] == on_ray["status"] == "done"
    expected = rewards(local["run_dir"])
    assert len(expected) == 10 and set(expected.values()) == {1.0}
    assert rewards(on_ray["run_dir"]) == expected
    assert on_ray["arms"] == local["arms"]  # the same summary (counts, rewards, pass^k, tokens)
    # 6 trials in flight on 3 workers, max_concurrency = 2: the bound held across the cluster
    assert 1 <= peak <= 2, peak
    # the worker node (one of the 3 workers, each given trials) could not see the data: its worker
    # played from the copy the driver shipped, unpacked in its own cache
    node_cache = cluster.worker_home / ".cache" / "agentrig"
    if cluster.isolated:  # (without mount namespaces here, the node still gets and uses its copy)
        assert list(cluster.worker_view(tau2_root).iterdir()) == []
    shipped = list((node_cache / "ray-data").glob("*/domains/airline/db.json"))
    assert len(shipped) == 1 and shipped[0].read_bytes() == (tau2_root / "domains/airline/db.json").read_bytes()
    assert not (shipped[0].parents[2] / "telecom").exists()  # only what the run reads

    server = EndpointProcess("agentrig.bench.terminal.scripted.solution_endpoint", "--api-key-env", KEY_ENV, env=_env())
    try:
        cache = tmp_path / "sandbox-cache"
        t_local = _run(terminal_experiment(tmp_path / "term-local.toml", server.base_url, cache, executor="local"))
        t_ray = _run(terminal_experiment(tmp_path / "term-ray.toml", server.base_url, cache, executor="ray",
                                         address=cluster.address))
    finally:
        server.stop()
    t_expected = rewards(t_local["run_dir"])
    assert len(t_expected) == 3 and set(t_expected.values()) == {1.0}
    assert rewards(t_ray["run_dir"]) == t_expected
    # 3 workers, 3 trials: one played on the worker node, from the task dirs shipped there
    tasks = {p.parent.name for p in (node_cache / "ray-data").glob("*/*/task.yaml")}
    assert tasks == {"write-marker", "word-frequency", "stale-lock"}
    if cluster.isolated:  # its layer built in the node's own cache (the experiment's cache_dir is not writable there)
        assert list((node_cache / "terminal" / "layers").glob("*/meta.json"))
        assert cache.parent.is_dir() and not cluster.worker_view(cache.parent).exists()  # hidden there
    assert_no_key(cluster.session_files() + [p for p in tmp_path.rglob("*") if p.is_file() and "runs" in p.parts])


def test_a_python_agents_trials_on_the_cluster_are_forked_from_each_workers_starter(cluster, gold, tau2_root, tmp_path):
    """The example plain-openai agent (agent kind python) on the cluster: each trial worker starts
    its own starter (agents/python_agent/host.py) on its own event loop and forks its trials from
    it; every trial valid and rewarded as the gold deserves."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "python_agents"
    toml = tau_experiment(tmp_path / "py-ray.toml", gold.base_url, tau2_root, executor="ray", address=cluster.address)
    text = toml.read_text(encoding="utf-8").replace(
        'name = "gold-llm"\nagent = { kind = "llm", tool_mode = "native" }',
        f'name = "py-openai"\nagent = {{ kind = "python", entry = "openai_agent:make", path = ["{examples}"] }}')
    assert 'kind = "python"' in text
    toml.write_text(text, encoding="utf-8")
    doc = _run(toml)
    assert doc["status"] == "done"
    stored = rows(doc["run_dir"])
    assert len(stored) == 10 and all(r.verdict.valid and r.verdict.reward == 1.0 for r in stored)
    starts = [e.data for r in stored for e in r.trajectory.events if (e.plugin, e.kind) == ("agent", "start")]
    assert len(starts) == 10 and all(s["forked"] for s in starts), starts


@pytest.mark.slow
def test_a_worker_killed_mid_trial_is_worker_lost_then_replayed_every_trial_valid_once(
        cluster, tau2_root, tmp_path):
    server = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root), "--api-key-env", KEY_ENV,
                             "--delay-ms", "150", env=_env())
    try:
        toml = tau_experiment(tmp_path / "kill.toml", server.base_url, tau2_root, executor="ray",
                              address=cluster.address, trials=1, max_concurrency=8)
        proc = subprocess.Popen([AGENTRIG, "run", str(toml), "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())
        # the worker node's trial worker, once it plays: SIGKILL it mid-trial
        killed: list[int] = []
        end = time.monotonic() + 120
        while not killed and time.monotonic() < end and proc.poll() is None:
            if stats(server.base_url)["chat_count"] >= 3:
                for pid in cluster.processes("worker", "TrialWorker"):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.1)
        out, err = proc.communicate(timeout=600)
    finally:
        server.stop()
    assert killed, "no trial worker ran on the worker node"
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out)
    stored = rows(doc["run_dir"])
    valid = Counter((r.key.domain, r.key.task_id) for r in stored if r.verdict.valid)
    assert valid == Counter({("airline", "0"): 1, ("airline", "1"): 1, ("airline", "12"): 1,
                             ("retail", "0"): 1, ("retail", "1"): 1})
    lost = [r for r in stored if not r.verdict.valid]
    # keyed by kind (one cause however many workers died), the Ray message kept as detail
    assert lost and all(r.verdict.invalid_cause == "worker_lost" for r in lost)
    assert all(r.verdict.invalid_detail.startswith("the Ray worker playing this trial died (") for r in lost)
    assert all(r.verdict.reward == 1.0 for r in stored if r.verdict.valid)


@pytest.mark.slow
def test_ctrl_c_and_a_killed_driver_leave_nothing_running_and_the_same_command_resumes(cluster, tau2_root, tmp_path):
    server = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root), "--api-key-env", KEY_ENV,
                             "--delay-ms", "150", env=_env())
    try:
        toml = tau_experiment(tmp_path / "stop.toml", server.base_url, tau2_root, executor="ray",
                              address=cluster.address, trials=2, max_concurrency=8)
        kept: dict = {}
        run_dir = tmp_path / "runs" / "stop"
        for sig, code in ((signal.SIGINT, 130), (signal.SIGKILL, -9)):
            proc = subprocess.Popen([AGENTRIG, "run", str(toml), "--json"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=_env())
            end = time.monotonic() + 180  # stop it once a trial of this session is stored
            while time.monotonic() < end and proc.poll() is None and (
                    not (run_dir / "trials.sqlite").exists() or len(rows(run_dir)) <= len(kept)):
                time.sleep(0.2)
            assert proc.poll() is None, "the run ended before it could be stopped"
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == code, err[-2000:]
            # the cluster's work for this run ends: no trial worker left on either node
            end = time.monotonic() + 60
            while time.monotonic() < end and (cluster.processes("head", "TrialWorker")
                                               or cluster.processes("worker", "TrialWorker")):
                time.sleep(0.2)
            assert not cluster.processes("head", "TrialWorker") and not cluster.processes("worker", "TrialWorker")
            now = {(r.key.domain, r.key.task_id, r.key.trial, r.attempt): r.started_at for r in rows(run_dir)}
            assert all(now.get(k) == v for k, v in kept.items())  # nothing stored was lost
            kept = now
        doc = _run(toml)  # the same command resumes
    finally:
        server.stop()
    assert doc["status"] == "done" and doc["played"] < 10
    valid = Counter((r.key.domain, r.key.task_id, r.key.trial) for r in rows(doc["run_dir"]) if r.verdict.valid)
    assert len(valid) == 10 and set(valid.values()) == {1}


async def test_data_gone_from_the_driver_is_one_message_before_joining_the_cluster(tau2_root, tmp_path):
    import shutil

    from agentrig.errors import ConfigError
    from agentrig.run import experiment, session
    from agentrig.run.ray.executor import RayExecutor
    from tests.run.ray_cluster import free_port

    copy = tmp_path / "data"
    shutil.copytree(tau2_root / "domains" / "airline", copy / "domains" / "airline")
    toml = tau_experiment(tmp_path / "nodata.toml", "http://127.0.0.1:9/v1", copy, executor="ray",
                          address=f"127.0.0.1:{free_port()}", trials=1)  # no cluster there: never reached
    toml.write_text(toml.read_text().replace('domains = ["airline", "retail"]', 'domains = ["airline"]')
                    .replace('task_ids = { airline = ["0", "1", "12"], retail = ["0", "1"] }', 'task_ids = ["0"]'))
    r = experiment.load(toml)
    run = session.open_run(r)
    try:
        specs = session.plan(r, run.store)
        shutil.rmtree(copy)  # read when the run was planned, gone when the executor packs it for the workers
        with pytest.raises(ConfigError, match=r"domains/airline \(under the data directory .*\) cannot be read to send "
                                              r"it to the Ray workers: it is gone"):
            await RayExecutor(r, run.store, run.run_id, {}).run(specs)
        assert run.store.verdict_rows() == []
    finally:
        run.close()


@pytest.mark.slow
def test_an_outage_holds_every_worker_with_one_probe_at_a_time_and_is_recorded_by_the_driver(
        cluster, tau2_root, tmp_path):
    """The endpoint goes down mid-run for a few seconds (a proxy in front of it answers 503 after
    holding each request): every worker's breaker holds its calls, one probe at a time goes out
    across the cluster, and the run completes by itself with the outage in the store."""
    from agentrig.run.outages import stored as stored_outages

    from tests.run.outage_proxy import OutageProxy, held_phase, max_overlap

    server = EndpointProcess("agentrig.bench.tau.scripted.gold_endpoint", "--data", str(tau2_root), "--api-key-env", KEY_ENV,
                             "--delay-ms", "100", env=_env())
    proxy = OutageProxy(server.base_url, hold_s=0.3)
    try:
        toml = tau_experiment(tmp_path / "down.toml", proxy.base_url, tau2_root, executor="ray",
                              address=cluster.address, trials=2, max_concurrency=4)
        proc = subprocess.Popen([AGENTRIG, "run", str(toml), "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())
        end = time.monotonic() + 180
        while len(proxy.log) < 20 and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the outage"
        proxy.down = True
        time.sleep(5)  # the outage's length (not a time bound)
        assert proc.poll() is None, f"the run stopped during the outage: {proc.stderr.read()[-2000:]}"
        proxy.down = False
        out, err = proc.communicate(timeout=600)
    finally:
        proxy.stop()
        server.stop()
    assert proc.returncode == 0, err[-3000:]
    doc = json.loads(out)
    assert doc["status"] == "done"
    stored = rows(doc["run_dir"])
    valid = Counter((r.key.domain, r.key.task_id, r.key.trial) for r in stored if r.verdict.valid)
    assert len(valid) == 10 and set(valid.values()) == {1}  # every planned trial, valid, once
    assert all(r.verdict.valid for r in stored)  # the outage spoiled no trial
    (outage,) = doc["outages"]
    assert outage["resumed"] is True and outage["probes"] >= 2 and outage["calls_held"] >= 2
    assert "server_error 503" in outage["last_fault"]
    store = Store.open(Path(doc["run_dir"]) / "trials.sqlite")
    try:
        (kept,) = stored_outages(store)  # the driver recorded the cluster's outage
    finally:
        store.close()
    assert kept.started_at == outage["started_at"] and kept.resumed is True
    # once the breakers held their calls (the first quiet spell), only probes, one at a time
    probes = held_phase(proxy.log, quiet_s=0.4)
    assert probes, "the cluster never went quiet during the outage"
    assert max_overlap(probes) == 1 and len(probes) < outage["probes"]
