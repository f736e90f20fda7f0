"""Tasks read with Terminal-Bench's other parsers, played for real (bwrap, a root built for the task's
image), and a parser no one has, among good tasks, in ``run``, ``tasks list`` and ``audit``.

- a task made in the SWE-bench adapter's shape (``parser_name: swebench``: its run-tests.sh runs
  the repository's tests with their output logged, grades the log — the FAIL_TO_PASS and
  PASS_TO_PASS tests must pass — and prints PASSED or FAILED between SWE-bench's markers): the
  oracle gets reward 1 and the no-op 0, one component ``tests`` as TB's parser yields it;
- a task whose ``parser_name`` no Terminal-Bench parser has loads, and is ``unsupported`` naming the
  parser — excluded from the run with the reason, listed so, audited as ``excluded`` — while the
  tasks beside it get their own verdicts.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .run_support import agentrig, experiment, records, run_json, write_task
from .sandbox_support import needs_root_bwrap

pytestmark = needs_root_bwrap()

BUGGY = "def add(a, b):\n    if a < 0 or b < 0:\n        return abs(a) + abs(b)\n    return a + b\n"
FIXED = "def add(a, b):\n    return a + b\n"

TESTS = textwrap.dedent("""\
    import sys

    sys.path.insert(0, "/app")
    from calc import add


    def test_adds_small_numbers():
        assert add(2, 3) == 5


    def test_adds_negative_numbers():
        assert add(-2, 3) == 1


    def test_unrelated_flaky_thing():
        assert False, "not among the graded tests"
    """)

# the adapter's run-tests.sh, reduced to what needs no network: run, log, grade, print the verdict
RUN_TESTS = textwrap.dedent("""\
    #!/bin/bash
    set -uo pipefail -x
    cd /app
    LOG_FILE=$(mktemp)
    set +x
    pytest -rA /tests/test_calc.py > "$LOG_FILE" 2>&1 || true
    echo ">>>>> Start Test Output"
    cat "$LOG_FILE"
    echo ">>>>> End Test Output"
    resolved=yes
    for t in test_adds_negative_numbers test_adds_small_numbers; do  # FAIL_TO_PASS + PASS_TO_PASS
        grep -q "^PASSED [^ ]*::$t\\$" "$LOG_FILE" || resolved=no
    done
    echo "SWEBench results starts here"
    if [ "$resolved" = yes ]; then echo PASSED; else echo FAILED; fi
    echo "SWEBench results ends here"
    """)


def swebench_task(root: Path, task_id: str = "calc-negatives") -> Path:
    d = write_task(root, task_id, dockerfile="FROM ubuntu:24.04\nWORKDIR /app\nCOPY calc.py /app/calc.py\n",
                   solution=f"#!/bin/bash\ncat > /app/calc.py <<'EOF'\n{FIXED}EOF\n",
                   files={"calc.py": BUGGY, "run-tests.sh": RUN_TESTS})
    (d / "task.yaml").write_text((d / "task.yaml").read_text().replace("parser_name: pytest", "parser_name: swebench"))
    (d / "tests" / "test_outputs.py").unlink()
    (d / "tests" / "test_calc.py").write_text(TESTS)
    return d


def unknown_parser_task(root: Path, task_id: str = "junit-report") -> Path:
    d = write_task(root, task_id)
    (d / "task.yaml").write_text((d / "task.yaml").read_text().replace("parser_name: pytest", "parser_name: junit"))
    return d


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terminal-cache")


ARMS = '\n[[arms]]\nname = "oracle"\nagent = { kind = "oracle" }\n\n[[arms]]\nname = "noop"\nagent = { kind = "noop" }\n'


def test_a_swebench_task_is_judged_by_its_graders_verdict_and_an_unknown_parser_is_excluded(tmp_path, cache):
    tasks = tmp_path / "tasks"
    swebench_task(tasks)
    unknown_parser_task(tasks)
    write_task(tasks, "write-ok")  # a pytest task beside them
    doc = run_json(experiment(tmp_path, "parsers", ARMS, cache=cache, tasks=tasks))
    assert set(doc["excluded"]) == {"terminal/junit-report"}
    reason = doc["excluded"]["terminal/junit-report"]
    assert reason.startswith("unsupported: ") and "junit-report/task.yaml: parser_name: 'junit'" in reason
    config = json.loads((Path(doc["run_dir"]) / "config.json").read_text())
    assert config["excluded"]["terminal/junit-report"] == reason
    got = {(r.key.arm, r.key.task_id): r.verdict for r in records(doc["run_dir"])}
    assert set(got) == {(a, t) for a in ("oracle", "noop") for t in ("calc-negatives", "write-ok")}
    oracle, noop = got["oracle", "calc-negatives"], got["noop", "calc-negatives"]
    assert oracle.reward == 1.0, oracle.reward_info
    assert oracle.reward_info.components == {"calc-negatives::tests": 1.0}
    assert noop.reward == 0.0 and noop.reward_info.components == {"calc-negatives::tests": 0.0}
    assert noop.reward_info.notes["failure_mode"] == "wrong_output"
    assert "the SWE-bench result reads 'FAILED'" in noop.reward_info.notes["detail"]
    assert got["oracle", "write-ok"].reward == 1.0 and got["noop", "write-ok"].reward == 0.0


def test_tasks_list_and_audit_give_an_unknown_parser_its_own_verdict(tmp_path, cache):
    tasks = tmp_path / "tasks"
    swebench_task(tasks)
    unknown_parser_task(tasks)
    write_task(tasks, "write-ok")
    listing = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks, "--json")
    assert listing.returncode == 0, listing.stderr
    rows = {r["id"]: r["sandboxes"] for r in json.loads(listing.stdout)["tasks"]}
    assert set(rows) == {"calc-negatives", "junit-report", "write-ok"}
    for kind, s in rows["junit-report"].items():
        assert not s["ok"] and s["reason"].startswith("unsupported: ") and "parser_name: 'junit'" in s["reason"], kind
    assert rows["calc-negatives"]["bwrap"]["ok"] and rows["write-ok"]["bwrap"]["ok"]
    table = agentrig("tasks", "list", "--bench", "terminal", "--tasks", tasks)
    assert table.returncode == 0 and "unsupported" in table.stdout and "parser_name: 'junit'" in table.stdout
    audit = agentrig("audit", "--bench", "terminal", "--tasks", tasks, "--cache-dir", cache, "--json")
    assert audit.returncode == 0, audit.stderr[-3000:]
    found = {r["task_id"]: r for r in json.loads(audit.stdout)["tasks"]}
    assert found["junit-report"]["status"] == "excluded" and found["junit-report"]["oracle"] is None
    assert found["junit-report"]["reason"].startswith("unsupported: ") and "'junit'" in found["junit-report"]["reason"]
    for task_id in ("calc-negatives", "write-ok"):
        row = found[task_id]
        assert row["status"] == "ok", row
        assert row["oracle"]["reward"] == 1.0 and row["noop"]["reward"] == 0.0


async def test_a_swebench_grader_that_never_printed_its_verdict_is_a_parse_error(tmp_path, cache):
    # the adapter's server-side failure (the repository could not be fetched): TB's parser raises
    from agentrig.bench.terminal.sandbox import SandboxSettings, open_sandbox
    from agentrig.bench.terminal.tasks.taskfile import load_task
    from agentrig.bench.terminal.verifier import verify

    d = swebench_task(tmp_path)
    (d / "run-tests.sh").write_text("#!/bin/bash\necho \"fatal: unable to access 'https://github.com/o/calc/'\"\nexit 128\n")
    task = load_task(d)
    box = await open_sandbox(task, SandboxSettings(kind="bwrap", cache_dir=cache))
    try:
        result = await verify(box, task, network=False)
    finally:
        await box.close()
    assert result.failure_mode == "parse_error" and result.reward == 0.0 and not result.resolved
    assert "SWEBench results starts here" in result.detail and "fatal: unable to access" in result.output
