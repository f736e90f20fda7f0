"""agentrig.bench.tau.data on the real τ²-bench files, and on broken copies of them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentrig.bench.tau import data
from agentrig.bench.tau.data import (
    DataError,
    RewardType,
    StructuredUserInstructions,
    load_policy,
    load_splits,
    load_tasks,
    select_tasks,
)

COUNTS = {"airline": 30, "retail": 74, "telecom": 114, "mock": 10}


def _copy_domain(tau2_root: Path, tmp_path: Path, domain: str, files=("tasks.json", "split_tasks.json")) -> Path:
    dest = tmp_path / "root" / "domains" / domain
    dest.mkdir(parents=True)
    for name in files:
        shutil.copy(tau2_root / "domains" / domain / name, dest / name)
    return tmp_path / "root"


@pytest.mark.parametrize("domain", sorted(COUNTS))
def test_each_domain_loads_with_its_count(tau2_root, domain):
    tasks = load_tasks(tau2_root, domain)
    assert len(tasks) == COUNTS[domain]
    assert len({t.id for t in tasks}) == len(tasks)
    # the file round-trips: every key of every task (extras such as airline's "annotations" too)
    raw = json.loads((tau2_root / "domains" / domain / "tasks.json").read_text())
    assert [t.to_file_dict() for t in tasks] == raw


def test_splits(tau2_root):
    assert {k: len(v) for k, v in load_splits(tau2_root, "airline").items()} == {"train": 30}
    assert {k: len(v) for k, v in load_splits(tau2_root, "retail").items()} == {"train": 74}
    tel = load_splits(tau2_root, "telecom")
    assert {k: len(v) for k, v in tel.items()} == {"base": 114, "train": 74, "test": 40, "small": 20}
    assert len(select_tasks(tau2_root, "telecom", "base")) == 114
    test = select_tasks(tau2_root, "telecom", "test")
    assert [t.id for t in test] == [t.id for t in load_tasks(tau2_root, "telecom") if t.id in set(tel["test"])]
    assert len(select_tasks(tau2_root, "airline", "train")) == 30
    assert len(select_tasks(tau2_root, "mock")) == 10


def test_missing_split_file_means_one_base_split(tau2_root, tmp_path):
    root = _copy_domain(tau2_root, tmp_path, "mock", files=("tasks.json",))
    splits = load_splits(root, "mock")
    assert list(splits) == ["base"] and len(splits["base"]) == 10


def test_structured_and_string_instructions(tau2_root):
    airline = {t.id: t for t in load_tasks(tau2_root, "airline")}
    ins = airline["0"].user_scenario.instructions
    assert isinstance(ins, StructuredUserInstructions)
    assert ins.domain == "airline" and "EHGLP3" in ins.reason_for_call and ins.unknown_info is None
    text = airline["0"].user_scenario.instructions_text()
    assert text.startswith("Domain: airline\nReason for call:\n\t") and "Unknown info" not in text
    mock = load_tasks(tau2_root, "mock")
    assert all(isinstance(t.user_scenario.instructions, str) for t in mock)


def test_task_fields_and_defaults(tau2_root):
    mock = {t.id: t for t in load_tasks(tau2_root, "mock")}
    # no reward_basis in the file: tau2-bench's default
    assert mock["create_task_1"].evaluation_criteria.reward_basis == [RewardType.DB, RewardType.COMMUNICATE]
    assert mock["create_task_1"].reward_basis == ["DB", "COMMUNICATE"]
    hist = mock["update_task_with_message_history"].initial_state.message_history
    assert [m["role"] for m in hist] == ["user", "assistant", "tool", "assistant"]
    ut = mock["update_task_with_user_tools"]
    assert ut.initial_state.initialization_actions[0].env_type == "user"
    assert ut.evaluation_criteria.env_assertions[0].func_name == "assert_notification_status"

    tel = load_tasks(tau2_root, "telecom")[0]
    assert tel.ticket.startswith("The user is experiencing issues with their mobile data.")
    assert tel.description.purpose == "Test resolution path: Mobile Data/Slow Internet Issues."
    a = tel.evaluation_criteria.actions[0]
    assert (a.action_id, a.requestor, a.name, a.arguments) == ("toggle_data_0", "user", "toggle_data", {})
    assert tel.evaluation_criteria.env_assertions[2].func_name == "assert_data_refueling_amount"
    assert tel.evaluation_criteria.env_assertions[0].assert_value is True
    assert tel.initial_state.initialization_actions[2].arguments["data_used_gb"] == 15.1
    assert sum(t.reward_basis == ["ENV_ASSERTION", "ACTION"] for t in load_tasks(tau2_root, "telecom")) == 20

    retail = load_tasks(tau2_root, "retail")
    assert sum(len(t.gold_actions) for t in retail) == 365
    issues = [i for t in retail for i in (t.issues or [])]
    assert len(issues) == 2 and all(i.status == "open" and i.title for i in issues)
    assert sum(a.compare_args is not None for t in retail for a in t.gold_actions) == 2
    # airline's "annotations" is no tau2 field: kept as an extra
    assert "annotations" in load_tasks(tau2_root, "airline")[0].model_extra


def test_cache_returns_same_objects_and_sees_edits(tau2_root, tmp_path):
    root = _copy_domain(tau2_root, tmp_path, "mock")
    first = load_tasks(root, "mock")
    again = load_tasks(root, "mock")
    assert first is not again and first[0] is again[0]
    path = root / "domains" / "mock" / "tasks.json"
    raw = json.loads(path.read_text())[:3]
    path.write_text(json.dumps(raw))
    assert len(load_tasks(root, "mock")) == 3


def _broken(tau2_root, tmp_path, domain, edit) -> Path:
    root = _copy_domain(tau2_root, tmp_path, domain)
    path = root / "domains" / domain / "tasks.json"
    raw = json.loads(path.read_text())
    edit(raw)
    path.write_text(json.dumps(raw))
    return root


def test_malformed_field_names_file_task_and_field(tau2_root, tmp_path):
    def edit(raw):
        raw[3]["evaluation_criteria"]["actions"][1]["arguments"] = "oops"
        raw[7]["evaluation_criteria"]["reward_basis"] = ["DB", "MAGIC"]

    root = _broken(tau2_root, tmp_path, "retail", edit)
    with pytest.raises(DataError) as exc:
        load_tasks(root, "retail")
    msg = str(exc.value)
    assert str(root / "domains" / "retail" / "tasks.json") in msg
    assert "task '3' (index 3), field evaluation_criteria.actions[1].arguments" in msg
    assert "task '8' (index 7), field evaluation_criteria.reward_basis[1]" in msg and "'MAGIC'" in msg
    assert "fix:" in msg


def test_missing_required_field_and_bad_instructions(tau2_root, tmp_path):
    def edit(raw):
        del raw[2]["user_scenario"]
        raw[4]["user_scenario"]["instructions"] = {"domain": "airline"}
        del raw[5]["id"]

    root = _broken(tau2_root, tmp_path, "airline", edit)
    with pytest.raises(DataError) as exc:
        load_tasks(root, "airline")
    msg = str(exc.value)
    assert "task '3' (index 2), field user_scenario: Field required" in msg
    assert "task '5' (index 4), field user_scenario.instructions.reason_for_call: Field required" in msg
    assert "task at index 5, field id: Field required" in msg


def test_bad_json_and_wrong_shape_and_duplicates(tau2_root, tmp_path):
    root = _copy_domain(tau2_root, tmp_path, "mock")
    path = root / "domains" / "mock" / "tasks.json"
    text = path.read_text()
    path.write_text(text[:500])
    with pytest.raises(DataError, match=r"tasks\.json: not valid JSON \(line \d+, column \d+"):
        load_tasks(root, "mock")
    path.write_text(json.dumps({"nope": 1}))
    with pytest.raises(DataError, match="expected a JSON list of tasks"):
        load_tasks(root, "mock")
    raw = json.loads(text)
    path.write_text(json.dumps({"tasks": raw}))  # tau2-bench also accepts {"tasks": [...]}
    assert len(load_tasks(root, "mock")) == 10
    path.write_text(json.dumps(raw + raw[:1]))
    with pytest.raises(DataError, match="duplicate task id.*create_task_1"):
        load_tasks(root, "mock")


def test_malformed_split_file(tau2_root, tmp_path):
    root = _copy_domain(tau2_root, tmp_path, "airline")
    (root / "domains" / "airline" / "split_tasks.json").write_text(json.dumps({"train": "0,1"}))
    with pytest.raises(DataError, match=r"split_tasks\.json: split 'train' must be a list"):
        load_splits(root, "airline")


def test_unknown_split_and_task_ids_list_alternatives(tau2_root):
    with pytest.raises(DataError) as exc:
        select_tasks(tau2_root, "telecom", "tset")
    msg = str(exc.value)
    assert "unknown split 'tset'" in msg
    assert msg.index("test (40)") < msg.index("base (114)")  # closest first
    with pytest.raises(DataError) as exc:
        select_tasks(tau2_root, "airline", task_ids=["0", "2"])
    msg = str(exc.value)
    # '2' is as close to 12, 20 … 29 as to any of them: no guess, and never the whole list of ids
    assert "unknown task id(s) '2'" in msg and "did you mean" not in msg and "closest" not in msg
    # an id outside the chosen split is unknown there
    base_only = next(iter(set(load_splits(tau2_root, "telecom")["train"])))
    assert select_tasks(tau2_root, "telecom", "train", task_ids=[base_only])[0].id == base_only
    test_id = load_splits(tau2_root, "telecom")["test"][0]
    with pytest.raises(DataError, match="split 'train' of domain 'telecom'"):
        select_tasks(tau2_root, "telecom", "train", task_ids=[test_id])
    # 'small' names ids this copy lacks
    with pytest.raises(DataError, match="none of them in"):
        select_tasks(tau2_root, "telecom", "small")
    picked = select_tasks(tau2_root, "retail", task_ids=["6", "1"])
    assert [t.id for t in picked] == ["1", "6"]  # file order, as tau2-bench filters


def test_missing_root_and_domain(tau2_root, tmp_path, monkeypatch):
    monkeypatch.delenv(data.ENV_VAR, raising=False)
    with pytest.raises(DataError, match=r"AGENTRIG_TAU2_DATA.*\[benchmark\].*--data DIR"):
        data.resolve_data_root(None)
    (tmp_path / "stuff").mkdir()
    with pytest.raises(DataError, match=r"has no domains/ directory \(it holds: stuff/\)"):
        data.resolve_data_root(tmp_path)
    with pytest.raises(DataError, match="does not exist"):
        data.resolve_data_root(tmp_path / "nowhere")
    monkeypatch.setenv(data.ENV_VAR, str(tau2_root))
    assert data.resolve_data_root(None) == tau2_root.resolve()
    # a tau2-bench checkout: data/tau2 inside it
    (tmp_path / "checkout" / "data").mkdir(parents=True)
    (tmp_path / "checkout" / "data" / "tau2").symlink_to(tau2_root)
    assert (data.resolve_data_root(tmp_path / "checkout") / "domains" / "airline").is_dir()
    with pytest.raises(DataError) as exc:
        data.domain_dir(tau2_root, "airlin")
    assert "unknown domain 'airlin'" in str(exc.value)
    assert "domains here: airline, " in str(exc.value)


def test_policies(tau2_root):
    airline = load_policy(tau2_root, "airline")
    assert airline == (tau2_root / "domains" / "airline" / "policy.md").read_text()
    tel_dir = tau2_root / "domains" / "telecom"
    main = (tel_dir / "main_policy.md").read_text()
    manual = (tel_dir / "tech_support_manual.md").read_text()
    workflow = (tel_dir / "tech_support_workflow.md").read_text()
    expect = f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"
    assert load_policy(tau2_root, "telecom") == expect
    assert load_policy(tau2_root, "telecom", "manual") == expect
    assert load_policy(tau2_root, "telecom", "workflow") == expect.replace(manual, workflow)
    with pytest.raises(DataError, match="variants: default, manual, workflow"):
        load_policy(tau2_root, "telecom", "flow")
    with pytest.raises(DataError, match="variants: default"):
        load_policy(tau2_root, "airline", "workflow")


def test_user_simulator_guidelines(tau2_root, tmp_path):
    plain = data.user_simulator_guidelines(tau2_root, with_tools=False)
    tools = data.user_simulator_guidelines(tau2_root, with_tools=True)
    assert plain and tools and plain != tools
    assert tools == (tau2_root / "user_simulator" / "simulation_guidelines_tools.md").read_text()
    assert data.user_simulator_guidelines(tmp_path, with_tools=True) is None


def full_size_telecom(tau2_root: Path, root: Path) -> Path:
    """A data root whose telecom tasks.json has 2,285 tasks (the upstream size): the real ones
    replicated with new ids (``perf/suite_timings.py`` times loading it)."""
    real = json.loads((tau2_root / "domains" / "telecom" / "tasks.json").read_text())
    big = []
    while len(big) < 2285:
        for t in real:
            if len(big) == 2285:
                break
            copy = dict(t, id=f"{t['id']}#{len(big)}")
            big.append(copy)
    dest = root / "domains" / "telecom"
    dest.mkdir(parents=True)
    (dest / "tasks.json").write_text(json.dumps(big, indent=4))
    return root


def test_full_size_telecom_file_loads_and_is_cached(tau2_root, tmp_path):
    root = full_size_telecom(tau2_root, tmp_path / "root")
    tasks = load_tasks(root, "telecom")
    assert len(tasks) == 2285 and tasks[-1].id.endswith("#2284")
    assert tasks[2284].evaluation_criteria.env_assertions is not None
    again = load_tasks(root, "telecom")
    assert again == tasks and again is not tasks and again[0] is tasks[0]  # served from the cache, not parsed again
