"""The benchmark seam (benchmark.py).

1. The generic code does not know τ²: no module under run/, analysis/, report/ or plugins/ imports
   ``agentrig.bench.tau`` (nor names it in a dynamic import); only benchmark.py's registry does.
2. A third benchmark — "arith": each task is a sum, the agent answers, equality judges — a package
   of its own (``tests/bench/arith/``, its scripted endpoint and its exception included) that
   imports no benchmark, registered by one line, runs through the generic machinery unchanged:
   ``agentrig run`` (runner, executor, store, an invalid trial replayed, resume), ``--smoke``,
   ``analyze`` (pass^k, its own failure classes and reward component, divergence on its own action
   sequence), the report, the jsonl export, and ``agentrig tasks list --bench arith``. The agent
   answers through its scripted endpoint, a real local OpenAI-compatible endpoint handed out by the
   seam.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentrig
from agentrig import benchmark as base
from agentrig.cli import app
from agentrig.run.executor import trial_seed
from agentrig.store.store import Store
from agentrig.testing.fake_endpoint import Fault, ThreadedFakeEndpoint

from tests.bench.arith import scripted as arith_scripted
from tests.bench.arith.benchmark import ArithBenchmark, SumsError
from tests.bench.arith.benchmark import tasks as arith_tasks

SRC = Path(agentrig.__file__).parent
GENERIC = ("run", "analysis", "report", "plugins")
KEY = "sk-arith-seam-test-0a1b2c3d4e5f"
KEY_ENV = "AGENTRIG_SEAM_TEST_KEY"


# ------------------------------------------------------------------------- 1. the generic code


def _imports(path: Path, text: str | None = None) -> list[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved), and every
    string constant that looks like a module path (``importlib.import_module("…")``)."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    names: list[str] = []
    tree = ast.parse(path.read_text(encoding="utf-8") if text is None else text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                mod = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.append(mod)
            names += [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("agentrig."):
            names.append(node.value.split(":")[0])
    return names


def test_generic_modules_do_not_import_a_benchmark():
    offenders = []
    files = [p for part in GENERIC for p in sorted((SRC / part).rglob("*.py"))]
    assert len(files) > 20  # the walk found the packages
    for path in files:
        for name in _imports(path):
            if name == "agentrig.bench.tau" or name.startswith(("agentrig.bench.tau.", "agentrig.bench.terminal")):
                offenders.append(f"{path.relative_to(SRC)} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_the_registry_is_the_only_bench_module_naming_tau():
    names = _imports(SRC / "benchmark.py")
    assert "agentrig.bench.tau.benchmark" in names  # the registry, by import path
    assert not any(n.startswith("agentrig.bench.tau") for n in _imports(SRC / "commands" / "tasks.py"))


def test_the_import_check_sees_relative_and_dynamic_imports():
    # the check itself can fail: imports of the τ² package from a module of run/, written three ways
    text = ("from ..bench.tau import data\nfrom . import store\nimport importlib\n"
            "importlib.import_module('agentrig.bench.tau.judge')\n")
    names = _imports(SRC / "run" / "executor.py", text)
    assert {"agentrig.bench.tau", "agentrig.bench.tau.data", "agentrig.run.store",
            "agentrig.bench.tau.judge"} <= set(names)


# ---------------------------------------------------------------------- 2. a third benchmark

# the third benchmark is a package of its own (tests/bench/arith/: settings, tasks, trial body,
# taxonomy, commands, an exception, a scripted endpoint), added to agentrig by this one line
ARITH = "tests.bench.arith.benchmark"


def register_arith() -> None:
    base.register("arith", f"{ARITH}:ArithBenchmark", exceptions=ARITH)


FLAKY = 3  # the scripted endpoint answers wrong for the trial seeds that are multiples of 3: flaky tasks


def wrong_on(seed: int) -> bool:
    return arith_scripted.wrong_on(seed, FLAKY)


EXPERIMENT = """
name = "arith"
[benchmark]
kind = "arith"
count = {count}
[run]
trials = {trials}
concurrency = 1
max_invalid_retries = 2
[channel]
base_url = "{base_url}"
api_key_env = "{key_env}"
max_attempts = 2
backoff_base_s = 0.001
timeout_s = 5
[roles.agent]
model = "fake-model"
[[arms]]
name = "llm"
[[arms]]
name = "gold"
agent = {{ kind = "gold" }}
"""


@pytest.fixture
def arith():
    register_arith()
    try:
        yield
    finally:
        base.unregister("arith")


def _write(path: Path, **values: Any) -> Path:
    path.write_text(textwrap.dedent(EXPERIMENT.format(key_env=KEY_ENV, **values)), encoding="utf-8")
    return path


def _cli(*args: str):
    return CliRunner(env={KEY_ENV: KEY}).invoke(app, list(args))


def test_an_unregistered_kind_is_one_clear_error(tmp_path):
    path = _write(tmp_path / "exp.toml", count=2, trials=1, base_url="http://127.0.0.1:9/v1")
    res = _cli("run", str(path))
    assert res.exit_code == 1
    assert "benchmark.kind" in res.stderr and "unknown benchmark kind 'arith'" in res.stderr
    assert "tau2" in res.stderr and "Traceback" not in res.output


def test_the_terminal_table_is_the_terminal_benchmarks_own(tmp_path):
    text = '[benchmark]\nkind = "terminal"\ntasks = "tasks"\nnum_tasks = 2\n[[arms]]\nname = "a"\n'
    path = tmp_path / "term.toml"
    path.write_text(text.replace("num_tasks = 2", "num_task = 2"), encoding="utf-8")
    res = _cli("run", str(path))  # the terminal [benchmark] model checks its fields
    assert res.exit_code == 1 and "benchmark.num_task" in res.stderr and "did you mean 'num_tasks'" in res.stderr
    path.write_text(text.replace("[benchmark]", "[user]\nkind = \"scripted\"\n[benchmark]"), encoding="utf-8")
    res = _cli("run", str(path))  # τ²'s tables are τ²'s
    assert res.exit_code == 1 and "user: unknown setting" in res.stderr
    path.write_text(text, encoding="utf-8")
    res = _cli("run", str(path))  # terminal is playable: its own loader names the missing directory
    assert res.exit_code == 1 and "tasks: is not a directory" in res.stderr and "fix:" in res.stderr
    assert "Traceback" not in res.output


def test_a_third_benchmark_runs_through_the_generic_machinery(tmp_path, arith):
    count = 6
    endpoint = base.get_benchmark("arith").scripted_endpoint(api_key=KEY, flaky=FLAKY)  # through the seam
    with ThreadedFakeEndpoint(endpoint=endpoint) as srv:
        path = _write(tmp_path / "exp.toml", count=count, trials=2, base_url=srv.base_url)
        # a misspelt setting of the benchmark's own table: the generic message, with a suggestion
        bad = tmp_path / "bad.toml"
        bad.write_text(path.read_text().replace("count = 6", "cuont = 6"), encoding="utf-8")
        res = _cli("run", str(bad))
        assert res.exit_code == 1 and "benchmark.cuont" in res.stderr and "did you mean 'count'" in res.stderr

        # --smoke: one task per arm, the agent role exercised
        res = _cli("run", str(path), "--smoke", "--json")
        assert res.exit_code == 0, res.output
        smoke = json.loads(res.stdout)
        assert smoke["ok"] and {a["arm"] for a in smoke["arms"]} == {"llm", "gold"}

        # the first chat call of the run fails twice (max_attempts = 2): that trial is invalid,
        # stored as an attempt and replayed
        srv.endpoint.push(Fault("server_error", status=500), Fault("server_error", status=500))
        res = _cli("run", str(path), "--json")
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        assert doc["status"] == "done" and doc["played"] == 2 * count * 2
        assert doc["arms"]["gold"]["mean_reward"] == 1.0
        assert doc["arms"]["llm"]["invalid_attempts"] == 1 and doc["arms"]["llm"]["invalid"] == 0
        run_dir = Path(doc["run_dir"])

        # resume: one more trial per task; only the new trials are played
        _write(path, count=count, trials=3, base_url=srv.base_url)
        doc = json.loads(_cli("run", str(path), "--json").stdout)
        assert doc["status"] == "done" and doc["played"] == 2 * count
        assert json.loads(_cli("run", str(path), "--json").stdout)["played"] == 0

    store = Store.open(run_dir / "trials.sqlite", create=False)
    try:
        rows = store.verdict_rows()
    finally:
        store.close()
    valid = [r for r in rows if r.valid]
    assert len(valid) == len({r.key for r in valid}) == 2 * count * 3  # every trial once
    assert sum(1 for r in rows if not r.valid) == 1

    # what the endpoint did, recomputed from the trial seeds: the llm arm's expected rewards
    expected = {t.id: [not wrong_on(trial_seed(300, "sums", t.id, k)) for k in range(3)] for t in arith_tasks(count)}
    wrong = sum(not ok for oks in expected.values() for ok in oks)
    assert 0 < wrong < 3 * count  # the seeds make some trials fail, not all
    pass_1 = sum(sum(oks) / 3 for oks in expected.values()) / count
    pass_3 = sum(all(oks) for oks in expected.values()) / count
    mixed = sum(0 < sum(oks) < 3 for oks in expected.values())

    res = _cli("analyze", str(run_dir), "--json")
    assert res.exit_code == 0, res.output
    analysis = json.loads(res.stdout)
    llm, gold = analysis["arms"]["llm"], analysis["arms"]["gold"]
    assert llm["overall"]["pass_1"]["value"] == pytest.approx(pass_1)
    assert llm["overall"]["pass_n"]["value"] == pytest.approx(pass_3)
    assert gold["overall"]["pass_n"]["value"] == 1.0
    assert list(llm["overall"]["components"]) == ["answer"]
    assert llm["overall"]["components"]["answer"]["passed"] == 3 * count - wrong
    classes = {c["id"]: c for c in llm["failures"]["classes"]}
    assert list(classes) == ["wrong_sum", "no_answer", "other"]  # the benchmark's taxonomy, in order
    assert classes["wrong_sum"]["primary"] == wrong == llm["failures"]["failed"]
    # a benchmark that names no components: the analysis tabulates those its verdicts stored
    ArithBenchmark.component_names = ()
    try:
        again = json.loads(_cli("analyze", str(run_dir), "--json").stdout)["arms"]["llm"]["overall"]["components"]
    finally:
        ArithBenchmark.component_names = ("answer",)
    assert again == llm["overall"]["components"]
    # divergence on the benchmark's action sequence (its answers): the mixed tasks diverge
    diverging = [c for c in llm["consistency"] if c["similarity"] is not None and c["similarity"] < 1]
    assert len(diverging) == mixed

    # the report, written by the run, shows the benchmark's classes
    html = Path(doc["report"]).read_text(encoding="utf-8")
    assert "Wrong sum" in html and "llm" in html

    # exports: jsonl is generic; the τ² format is τ²'s, not this benchmark's
    res = _cli("export", str(run_dir), "--format", "jsonl")
    assert res.exit_code == 0 and f"wrote {2 * count * 3 + 1} record(s)" in res.stdout
    res = _cli("export", str(run_dir), "--format", "tau2")
    assert res.exit_code == 1 and "unknown export format 'tau2'; use jsonl" in res.stderr

    # the benchmark's own task commands, through --bench
    res = _cli("tasks", "list", "--bench", "arith", "--count", "2")
    assert res.exit_code == 0 and res.stdout.splitlines() == ["sum0: 3 + 5", "sum1: 10 + 16"]
    res = _cli("audit", "--bench", "arith")
    assert res.exit_code == 1 and "no `agentrig audit` command" in res.stderr and "Traceback" not in res.output


def test_the_third_benchmark_is_its_package_and_one_registry_line(tmp_path, arith):
    # its package imports agentrig's seam, envelope, types and testing base, never a benchmark
    package = Path(__file__).parent / "arith"
    imported = set()
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module or "")
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    ours = {m for m in imported if m.startswith("agentrig")}
    assert {"agentrig.benchmark", "agentrig.testing._scripted"} <= ours
    assert not [m for m in ours if m.startswith("agentrig.bench.")], ours

    # its scripted endpoint and its exceptions come through the registry line
    assert type(base.get_benchmark("arith").scripted_endpoint()).__module__ == "tests.bench.arith.scripted"
    assert base.exception_trees()["arith"] == ARITH
    from tests.test_errors_tree import drawn_core, drawn_by

    own = drawn_by(importlib.import_module(ARITH).__doc__, set(drawn_core()))
    assert own == {"SumsError": ("DataError", None, "tests/bench/arith/benchmark")}
    assert [b.__name__ for b in SumsError.__bases__] == ["DataError"]
    assert SumsError.__module__.replace(".", "/") == own["SumsError"][2]

    # its own exception is a user error like any other: one line, exit 1, no traceback
    path = _write(tmp_path / "exp.toml", count=0, trials=1, base_url="http://127.0.0.1:9/v1")
    res = _cli("run", str(path))
    assert res.exit_code == 1 and "benchmark.count: selects no sum" in res.stderr and "fix: set count" in res.stderr
    assert "Traceback" not in res.output
