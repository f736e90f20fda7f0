"""The AppWorld adapter's own parts, without AppWorld: the data root and its errors, the code
agent's reply parsing, the verdict from a TestTracker dict, the failure classes, the settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentrig.bench.appworld.agent import parse_code
from agentrig.bench.appworld.benchmark import classify_failed_tests
from agentrig.bench.appworld.data import dataset_ids, load_tasks, resolve_root, scenario_of, solution_code
from agentrig.bench.appworld.episode import clip, verdict_of
from agentrig.benchmark import settings_model
from agentrig.errors import ConfigError


def _tree(root: Path) -> Path:
    data = root / "data"
    for part in ("base_dbs", "api_docs", "datasets"):
        (data / part).mkdir(parents=True)
    (data / "datasets" / "dev.txt").write_text("abc1234_1\nabc1234_2:tagged\n")
    for tid, n in (("abc1234_1", 3), ("abc1234_2", 5)):
        folder = data / "tasks" / tid
        (folder / "ground_truth").mkdir(parents=True)
        (folder / "specs.json").write_text(json.dumps({"instruction": f"do thing {n}", "datetime": "2023-05-18T12:00:00",
                                                       "supervisor": {"first_name": "Ada", "email": "a@x.org"},
                                                       "db_version": "0.1.0"}))
        (folder / "ground_truth" / "metadata.json").write_text(json.dumps({"difficulty": 2, "num_apps": 1,
                                                                            "num_solution_code_lines": n}))
    (data / "tasks" / "abc1234_1" / "ground_truth" / "compiled_solution.py").write_text(
        "from x import y\n\n\ndef solution(apis, requester):\n    a = 1\n    if a:\n        apis.supervisor.complete_task()\n")
    return root


def test_missing_data_names_the_download_command(tmp_path, monkeypatch):
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    with pytest.raises(ConfigError, match="appworld download data"):
        resolve_root(None)
    with pytest.raises(ConfigError, match=r"appworld download data"):
        resolve_root(str(tmp_path / "nowhere"))
    (tmp_path / "half" / "data" / "tasks").mkdir(parents=True)
    with pytest.raises(ConfigError, match="incomplete download"):
        resolve_root(str(tmp_path / "half"))


def test_tasks_of_a_dataset(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setenv("APPWORLD_ROOT", str(root))
    assert resolve_root(None) == root and resolve_root(str(root / "data")) == root
    assert dataset_ids(root, "dev") == ["abc1234_1", "abc1234_2"]
    tasks = load_tasks(root, "dev")
    assert [(t.id, t.scenario, t.difficulty, t.num_solution_code_lines) for t in tasks] == [
        ("abc1234_1", "abc1234", 2, 3), ("abc1234_2", "abc1234", 2, 5)]
    assert [t.id for t in load_tasks(root, "dev", num_tasks=1)] == ["abc1234_1"]
    with pytest.raises(ConfigError, match="not in the 'dev' dataset"):
        load_tasks(root, "dev", task_ids=["zzz9999_1"])
    with pytest.raises(ConfigError, match="use one of: dev"):
        dataset_ids(root, "train")
    assert scenario_of("50e1ac9_12") == "50e1ac9"


def test_the_oracle_plays_the_whole_compiled_solution_as_appworlds_verify(tmp_path):
    # AppWorld's verify runs the whole compiled_solution.py (imports, helpers) and then calls
    # solution(apis, requester); the canary line is dropped as GroundTruth.load drops it
    root = _tree(tmp_path)
    gt = root / "data" / "tasks" / "abc1234_1" / "ground_truth"
    gt.joinpath("compiled_solution.py").write_text(
        "# Canary String: appworld:x\nfrom x import y\n\n\ndef helper() -> int:\n    return 1\n\n\n"
        "def solution(apis, requester) -> None:\n    if helper():\n        apis.supervisor.complete_task()\n")
    assert solution_code(root, "abc1234_1") == (
        "from x import y\n\n\ndef helper() -> int:\n    return 1\n\n\n"
        "def solution(apis, requester) -> None:\n    if helper():\n        apis.supervisor.complete_task()\n"
        "\nsolution(apis, requester)\n")
    assert solution_code(root, "abc1234_2") is None


@pytest.mark.parametrize("reply,code,problem", [
    ("Let me look.\n```python\nprint(1)\n```", "print(1)", None),
    ("```py\nx = 2\n```", "x = 2", None),
    ("```python\na\n```\n```python\nb\n```", None, "2 python blocks"),
    ("text only", None, "no python block"),
    ("```bash\nls\n```", None, "no python block"),
    ("```python\nprint(1)\n", None, "never closed"),
    ("```json\n{}\n```\n```python\nok()\n```", "ok()", None),
    ("<think>```python\nno()\n```</think>```python\nyes()\n```", "yes()", None),
])
def test_text_mode_takes_exactly_one_python_block(reply, code, problem):
    got, why = parse_code(reply)
    assert got == code
    assert (why is None) if problem is None else (problem in why)


def test_verdict_from_appworlds_test_tracker():
    result = {"success": False, "num_tests": 2, "difficulty": 1, "completed": True,
              "passes": [{"requirement": "assert answers match.", "label": "no_op_fail"}],
              "failures": [{"requirement": "assert no model other than\n(models.changed_model_names)",
                            "trace": "...", "label": "no_op_pass"}]}
    v = verdict_of("t_1", "completed", result)
    assert v.reward == 0.0 and v.valid and v.termination == "completed"
    assert v.reward_info.components == {"t_1::assert answers match.": 1.0, "t_1::assert no model other than": 0.0,
                                        "task_goal_completion": 0.0}
    assert v.reward_info.reward_basis == ["t_1::assert answers match.", "t_1::assert no model other than"]
    assert v.reward_info.notes["failed_tests"] == "assert no model other than"
    twice = verdict_of("t_1", "completed", {**result, "passes": result["passes"] * 2})
    assert list(twice.reward_info.components)[:2] == ["t_1::assert answers match.", "t_1::assert answers match. (2)"]
    ok = verdict_of("t_1", "completed", {**result, "success": True, "failures": []})
    assert ok.reward == 1.0 and ok.reward_info.components["task_goal_completion"] == 1.0


def test_failed_tests_map_to_classes():
    assert classify_failed_tests(["assert the answer matches"]) == ["wrong_answer"]
    assert classify_failed_tests(["assert no model other than simple_note.Note was changed"]) == ["collateral_change"]
    assert classify_failed_tests(["assert the note was added", "assert answers match"]) == ["wrong_state", "wrong_answer"]


@pytest.mark.parametrize("requirement,cls", [
    # AppWorld's real test names (its tasks' evaluation.py)
    ("assert answers match.", "wrong_answer"),
    ("assert model changes match simple_note.Note.", "collateral_change"),
    ("assert model changes match", "collateral_change"),  # the first line of a long one
    ("assert model changes match\namazon.Product, amazon.Order,\nignoring amazon.CartEntry.", "collateral_change"),
    ("assert model changes match venmo.Transaction, venmo.Notification,\nvenmo.User, ignoring venmo.PaymentCard.",
     "collateral_change"),
    ("assert no model changes.", "collateral_change"),
    ("obtain added, updated, removed splitwise.Expense records using models.changed_records,\n"
     "and assert 0 were updated or removed.", "wrong_state"),
    ("assert 0 venmo.PaymentCard records have been updated or deleted using\nmodels.changed_records.", "wrong_state"),
    ("assert the added transaction has amount public_data.amount.", "wrong_state"),
])
def test_appworlds_real_test_names_map_to_classes(requirement, cls):
    assert classify_failed_tests([requirement]) == [cls]


def test_clip_keeps_head_and_tail():
    text, omitted = clip("a" * 100 + "b" * 100, 60)
    assert text.startswith("a" * 40) and text.endswith("b" * 20) and omitted == 140
    assert clip("short", 60) == ("short", 0)


def test_settings_are_checked():
    model = settings_model("appworld")
    assert model.model_validate({"kind": "appworld"}).dataset == "dev"
    with pytest.raises(Exception, match="dataset"):
        model.model_validate({"kind": "appworld", "dataset": "everything"})
    with pytest.raises(Exception, match="extra"):
        model.model_validate({"kind": "appworld", "split": "dev"})


def test_task_and_scenario_goal_completion_per_rerun():
    from types import SimpleNamespace as Row

    from agentrig.bench.appworld.goals import goal_completion

    rows = [Row(task_id=t, trial=i, valid=True, reward=r) for t, i, r in (
        ("aaa1111_1", 0, 1.0), ("aaa1111_2", 0, 1.0), ("bbb2222_1", 0, 0.0),   # rerun 0: TGC 2/3, SGC 1/2
        ("aaa1111_1", 1, 1.0), ("aaa1111_2", 1, 0.0), ("bbb2222_1", 1, 1.0))]  # rerun 1: TGC 2/3, SGC 1/2
    rows.append(Row(task_id="bbb2222_1", trial=2, valid=False, reward=0.0))    # rerun 2: nothing valid
    got = goal_completion(rows, 3)
    assert got["task goal completion"] == pytest.approx(2 / 3)
    assert got["scenario goal completion"] == pytest.approx(0.5)
    assert goal_completion([], 2) == {"task goal completion": None, "scenario goal completion": None}


def test_workers_leave_no_scratch_directory_behind(appworld_python, synthetic_root):
    # a worker is killed, never asked to exit: its scratch directory (APPWORLD_ROOT) lives under one
    # directory of this process, which closing the pools removes
    from agentrig.bench.appworld import pool

    pool.close_pools()  # this test process may hold pools of earlier tests (pytest-xdist runs many files in one)
    worker = pool.Worker._start(appworld_python, synthetic_root)
    parent = pool._scratch_parent()
    assert [p.name.startswith("world-") for p in parent.iterdir() if p.is_dir()] == [True]
    assert (parent / "owner").read_text().startswith(f"{os.getpid()}@")  # whose it is (reap_scratch)
    worker.kill()
    pool.close_pools()
    assert not parent.exists()
