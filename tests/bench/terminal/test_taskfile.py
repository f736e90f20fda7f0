"""Reading Terminal-Bench 1 and Harbor task directories (the built-in tasks and malformed ones)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentrig.bench.terminal.tasks.taskfile import TaskFileError, builtin_tasks_dir, load_task, load_tasks
from agentrig.bench.terminal.tasks.taskmodel import DEFAULT_AGENT_TIMEOUT_S, DEFAULT_TEST_TIMEOUT_S

BUILTIN = builtin_tasks_dir()


def _tb1(root: Path, name: str, yaml_text: str, *, tests: bool = True) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "task.yaml").write_text(yaml_text)
    (d / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /work\n")
    if tests:
        (d / "tests").mkdir()
        (d / "tests" / "test_outputs.py").write_text("def test_x():\n    assert True\n")
    return d


def _harbor(root: Path, name: str, toml_text: str, *, instruction: str | None = "Do it.\n") -> Path:
    d = root / name
    (d / "tests").mkdir(parents=True)
    (d / "task.toml").write_text(toml_text)
    if instruction is not None:
        (d / "instruction.md").write_text(instruction)
    (d / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
    return d


def test_builtin_tasks_load_both_formats():
    tasks, invalid = load_tasks(BUILTIN)
    assert invalid == []
    assert len(tasks) >= 12
    formats = [t.format for t in tasks]
    assert formats.count("harbor") >= 3 and formats.count("tb1") > formats.count("harbor")
    assert [t.id for t in tasks] == sorted(t.id for t in tasks)
    for t in tasks:
        assert t.instruction.strip(), t.id
        assert t.solution or t.solution_script, f"{t.id} has no solution"
        assert t.tests_dir is not None and t.tests_dir.is_dir(), t.id
        assert t.dockerfile is not None and t.dockerfile.is_file(), t.id
        assert t.workdir == "/app", t.id


def test_tb1_fields_read():
    t = load_task(BUILTIN / "stale-lock")
    assert (t.format, t.difficulty, t.category) == ("tb1", "medium", "system-administration")
    assert t.tags == ["processes", "timeouts", "locks"]
    assert (t.agent_timeout_s, t.test_timeout_s, t.parser_name) == (240.0, 60.0, "pytest")
    assert t.solution is not None and len(t.solution) == 4  # solution.yaml
    assert t.solution[2].command == "rm -f /app/run/collect.lock"
    assert t.solution[0].block is True and t.solution[0].min_timeout_sec == 0.1
    assert t.extra == {"author_name": "agentrig"}
    assert load_task(BUILTIN / "shell-session-state").run_tests_in_same_shell is True
    perms = load_task(BUILTIN / "script-permissions")
    assert perms.compose is not None and perms.solution_script.name == "solution.sh"
    assert load_task(BUILTIN / "csv-region-totals").run_tests.name == "run-tests.sh"


def test_harbor_fields_read():
    t = load_task(BUILTIN / "harbor-service-config")
    assert t.format == "harbor" and t.instruction.startswith("Edit the service configuration")
    assert (t.agent_timeout_s, t.test_timeout_s) == (180.0, 60.0)
    assert t.verifier_env == {"EXPECTED_PORT": "9443"}
    assert (t.cpus, t.memory_mb, t.allow_internet) == (1.0, 1024, False)
    assert t.run_tests.name == "test.sh" and t.solution_script.parts[-2:] == ("solution", "solve.sh")
    assert t.dockerfile.parts[-2:] == ("environment", "Dockerfile")
    assert load_task(BUILTIN / "harbor-backup-archive").memory_mb == 1024  # memory = "1G"


def test_defaults(tmp_path):
    t = load_task(_tb1(tmp_path, "plain", "instruction: say hi\n"))
    assert (t.agent_timeout_s, t.test_timeout_s) == (DEFAULT_AGENT_TIMEOUT_S, DEFAULT_TEST_TIMEOUT_S) == (360.0, 60.0)
    assert (t.parser_name, t.run_tests_in_same_shell, t.tags, t.workdir) == ("pytest", False, [], "/work")
    h = load_task(_harbor(tmp_path, "hplain", ""))
    assert (h.test_timeout_s, h.allow_internet, h.memory_mb) == (600.0, True, 2048)  # Harbor's defaults


def test_mixed_directory_selection(tmp_path):
    for name in ("write-marker", "harbor-dedupe-emails", "stale-lock"):
        shutil.copytree(BUILTIN / name, tmp_path / name)
    (tmp_path / "notes").mkdir()  # not a task: ignored
    tasks, _ = load_tasks(tmp_path)
    assert [t.id for t in tasks] == ["harbor-dedupe-emails", "stale-lock", "write-marker"]
    tasks, _ = load_tasks(tmp_path, task_ids=["write-marker", "harbor-dedupe-emails"])
    assert [t.id for t in tasks] == ["write-marker", "harbor-dedupe-emails"]
    tasks, _ = load_tasks(tmp_path, num_tasks=2)
    assert [t.id for t in tasks] == ["harbor-dedupe-emails", "stale-lock"]
    single, _ = load_tasks(tmp_path / "stale-lock")  # a task directory itself
    assert [t.id for t in single] == ["stale-lock"]
    with pytest.raises(TaskFileError) as err:
        load_tasks(tmp_path, task_ids=["nope"])
    assert err.value.field == "task_ids" and "nope" in str(err.value)


MALFORMED_TB1 = [
    ("bad-yaml", "instruction: [unclosed\n", "task.yaml", "(syntax)", "line"),
    ("no-instruction", "difficulty: easy\n", "task.yaml", "instruction", "missing"),
    ("empty-instruction", "instruction: '   '\n", "task.yaml", "instruction", "missing or empty"),
    ("list-parser", "instruction: x\nparser_name: [pytest]\n", "task.yaml", "parser_name", "not a parser's name"),
    ("bad-timeout", "instruction: x\nmax_agent_timeout_sec: soon\n", "task.yaml", "max_agent_timeout_sec", "seconds"),
    ("bad-tags", "instruction: x\ntags: shell\n", "task.yaml", "tags", "list"),
    ("bad-shell", "instruction: x\nrun_tests_in_same_shell: maybe\n", "task.yaml", "run_tests_in_same_shell", "true/false"),
    ("list-top", "- instruction: x\n", "task.yaml", "(top level)", "mapping"),
]


@pytest.mark.parametrize("name, text, file, field, words", MALFORMED_TB1)
def test_malformed_tb1_names_file_field_and_fix(tmp_path, name, text, file, field, words):
    d = _tb1(tmp_path, name, text)
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    e = err.value
    assert e.path == d / file and e.field == field
    assert words in e.problem
    assert e.fix and str(d / file) in str(e) and field in str(e) and "fix:" in str(e)


def test_malformed_solution_yaml(tmp_path):
    d = _tb1(tmp_path, "sol", "instruction: x\n")
    (d / "solution.yaml").write_text("- command: ls\n- block: true\n")
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    assert (err.value.path.name, err.value.field) == ("solution.yaml", "[1].command")
    (d / "solution.yaml").write_text("- command: ls\n  wait: 3\n")
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    assert err.value.field == "[0].wait"


def test_tb1_without_any_tests(tmp_path):
    d = _tb1(tmp_path, "untested", "instruction: x\n", tests=False)
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    assert err.value.field == "run-tests.sh" and "test_outputs.py" in err.value.fix


MALFORMED_HARBOR = [
    ("bad-toml", "[agent\ntimeout_sec = 1\n", "Do it.", "task.toml", "(syntax)"),
    ("no-instruction", "", None, "instruction.md", "instruction.md"),
    ("blank-instruction", "", "  \n", "instruction.md", "instruction.md"),
    ("bad-agent-timeout", "[agent]\ntimeout_sec = -5\n", "Do it.", "task.toml", "[agent].timeout_sec"),
    ("bad-env", "[verifier]\nenv = { A = 1 }\n", "Do it.", "task.toml", "[verifier].env"),
    ("bad-internet", "[environment]\nallow_internet = \"no\"\n", "Do it.", "task.toml", "[environment].allow_internet"),
    ("bad-memory", "[environment]\nmemory = \"lots\"\n", "Do it.", "task.toml", "[environment].memory"),
    ("agent-not-table", "agent = 3\n", "Do it.", "task.toml", "[agent]"),
]


@pytest.mark.parametrize("name, toml_text, instruction, file, field", MALFORMED_HARBOR)
def test_malformed_harbor_names_file_and_field(tmp_path, name, toml_text, instruction, file, field):
    d = _harbor(tmp_path, name, toml_text, instruction=instruction)
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    assert err.value.path == d / file and err.value.field == field
    assert err.value.fix


def test_harbor_without_test_script(tmp_path):
    d = _harbor(tmp_path, "no-test", "")
    (d / "tests" / "test.sh").unlink()
    with pytest.raises(TaskFileError) as err:
        load_task(d)
    assert err.value.field == "tests/test.sh"


def test_both_formats_in_one_directory(tmp_path):
    d = _harbor(tmp_path, "both", "")
    (d / "task.yaml").write_text("instruction: x\n")
    with pytest.raises(TaskFileError, match="both"):
        load_task(d)


def test_skip_invalid_lists_and_goes_on(tmp_path):
    shutil.copytree(BUILTIN / "write-marker", tmp_path / "write-marker")
    _tb1(tmp_path, "broken-yaml", "instruction: [oops\n")
    _harbor(tmp_path, "broken-harbor", "", instruction=None)
    with pytest.raises(TaskFileError) as err:  # without skip_invalid: the first error, alone
        load_tasks(tmp_path)
    assert err.value.path == tmp_path / "broken-harbor" / "instruction.md"
    tasks, invalid = load_tasks(tmp_path, skip_invalid=True)
    assert [t.id for t in tasks] == ["write-marker"]
    assert [(i.task_id, i.file.name, i.field) for i in invalid] == [
        ("broken-harbor", "instruction.md", "instruction.md"), ("broken-yaml", "task.yaml", "(syntax)")]


def test_not_a_task_root(tmp_path):
    with pytest.raises(TaskFileError) as err:
        load_tasks(tmp_path / "missing")
    assert err.value.field == "tasks"
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskFileError, match="no task directory"):
        load_tasks(tmp_path / "empty")


def test_support_per_sandbox_kind(tmp_path):
    from agentrig.bench.terminal.tasks.taskmodel import support

    for task in load_tasks(BUILTIN)[0]:
        assert support(task, "bwrap").ok, (task.id, support(task, "bwrap").reason)
    net = _tb1(tmp_path, "net", "instruction: x\n")
    (net / "run-tests.sh").write_text("#!/bin/bash\ncurl -fsSL https://example.org/data -o /tmp/d\npytest $TEST_DIR/test_outputs.py -rA\n")
    s = support(load_task(net), "bwrap")
    assert not s.ok and s.exclusion == "needs_network" and "curl" in s.reason
    assert support(load_task(net), "bwrap", network=True).ok  # runs as written when there is network
    assert support(load_task(net), "docker").ok
    node = _tb1(tmp_path, "node", "instruction: x\n")
    (node / "Dockerfile").write_text("FROM node:20-alpine\nWORKDIR /app\n")
    s = support(load_task(node), "bwrap")
    assert not s.ok and s.exclusion == "needs_container" and "node:20-alpine" in s.reason
