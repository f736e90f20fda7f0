"""Build a small AppWorld ``data/`` tree of synthetic tasks with AppWorld's own code (run in its venv).

    python synthetic.py ROOT        # writes ROOT/data (deleting an old one) and ROOT/synthetic.json
    python synthetic.py --ship-as-test-set ROOT DATASET   # that dataset's ground truth as test sets ship
                                                          # it: minimal mode, no solutions

The tasks have the shape real downloads have, and AppWorld's own code writes each part:

- ``data/api_docs/standard/<app>.json`` and the ``api_docs`` database: AppWorld's ``prepare_api_docs``
  over its own apps (the docs an agent reads through ``apis.api_docs``);
- ``data/base_dbs/<app>.db``: one supervisor (the main user), her account passwords, her Simple
  Note account with a few notes, her phone account with a friend's number (``ModelCollection``);
- per task ``data/tasks/<id>/``, written by AppWorld's ``Task.save`` (``specs.json``, ``dbs/`` as
  changes over the base databases) and ``GroundTruth.save`` (``ground_truth/``: ``metadata.json``,
  public/private data, ``answer.json``, ``evaluation.py``, ``test_data.json``, ``required_apps.json``,
  ``api_calls.json``, ``generator.py``, and the solution twice, as real tasks ship it:
  ``solution.py`` in generator form — ``solution()`` drives a ``_solution()`` generator that
  yields after each step — and ``compiled_solution.py``, a module of its own with imports and
  helpers beside ``solution(apis, requester)``);
- each ``evaluation.py`` is shaped as real ones are: ``assert answers match.`` first (every real
  task has it; a no-op fails it, since the task was never completed), then ``assert model changes
  match <models>.`` ("nothing else changed"), then the task's own tests;
- ``test_data.json`` (each test's ``no_op_pass`` / ``no_op_fail`` label) comes from AppWorld's own
  ``TestTracker.prepare_test_data`` over two plays in AppWorld's engine, as its task generator
  labels them: the compiled solution run as AppWorld's ``verify`` runs it (the whole file, then
  ``solution(apis, requester)``; it must pass every test) and a no-op;
- ``data/datasets/{train,dev,test_normal,test_challenge}.txt``.

The tasks themselves (wording, tests, solutions, wrong plays) are in ``synthetic_tasks.py``. One
task uses two apps (Simple Note and Phone). ``synthetic.json`` lists per task the steps of
its solution as an agent plays them (one block of code a step) and two wrong plays (a wrong
answer or end state, a collateral change) for the tests' scripted endpoint. The tasks and their
wording are agentrig's own; nothing of AppWorld's task data is used or needed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap

try:  # a module of agentrig's package (the tests that walk it) …
    from .synthetic_tasks import (BASE_NOTES, COMPILED_HEAD, DATASETS, EXPERIMENT, FRIEND, NOTE_PASSWORD,
                                  PHONE_PASSWORD, SOLUTION_HEAD, SUPERVISOR, TASKS, WHEN)
except ImportError:  # … or a script run in AppWorld's venv, its tasks beside it
    from synthetic_tasks import (BASE_NOTES, COMPILED_HEAD, DATASETS, EXPERIMENT, FRIEND, NOTE_PASSWORD,  # type: ignore
                                 PHONE_PASSWORD, SOLUTION_HEAD, SUPERVISOR, TASKS, WHEN)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def solution_file(steps: list[tuple[str, str]]) -> str:
    """``solution.py`` in generator form: ``solution()`` drives ``_solution()``, which yields after each step."""
    body = "".join(f"    # {label}\n" + textwrap.indent(code, "    ") + "    yield\n" for label, code in steps)
    return SOLUTION_HEAD + body


def _base(data: str, apps: list[str], user_apps: list[str], docs: dict) -> None:
    from appworld.collections.models import ModelCollection

    base = ":memory:agentrig-base"
    m = ModelCollection.load(to_db_home_path=base, from_db_home_path=base, load_apps=apps, create_db=True)
    m.admin.MainUser(**SUPERVISOR).save()
    sup = m.supervisor.Supervisor(**SUPERVISOR)
    sup.save()
    own = {"simple_note": NOTE_PASSWORD, "phone": PHONE_PASSWORD}
    for account in user_apps:
        if account in ("api_docs", "supervisor"):
            continue
        m.supervisor.AccountPassword(supervisor_id=sup.id, account_name=account,
                                     password=own.get(account, f"pw-{account}-91")).save()
    user = m.simple_note.User(first_name=SUPERVISOR["first_name"], last_name=SUPERVISOR["last_name"],
                              email=SUPERVISOR["email"], password=NOTE_PASSWORD, verified=True)
    user.save()
    for title, content, tags in BASE_NOTES:
        m.simple_note.Note(user_id=user.id, title=title, content=content, tags=tags).save()
    me = m.phone.User(first_name=SUPERVISOR["first_name"], last_name=SUPERVISOR["last_name"],
                      phone_number=SUPERVISOR["phone_number"], password=PHONE_PASSWORD)
    me.save()
    m.phone.User(first_name=FRIEND["first_name"], last_name=FRIEND["last_name"], phone_number=FRIEND["phone_number"],
                 password="friend-pw-6631").save()
    m.phone.Contact(user_id=me.id, first_name=FRIEND["first_name"], last_name=FRIEND["last_name"],
                    email=FRIEND["email"], phone_number=FRIEND["phone_number"], relationships=["friend"]).save()
    for app in user_apps:
        for d in docs[app]:
            m.api_docs.ApiDoc(app_name_=d["app_name"], api_name=d["api_name"], path=d["path"], method=d["method"],
                              description=d["description"], parameters=d["parameters"],
                              response_schemas=d["response_schemas"]).save()
    m.save(db_home_path=os.path.join(data, "base_dbs"), format="full", delete_if_exists=True)
    m.close()


def _ground_truth(task_id: str, spec: dict, test_data=None, api_calls=None):
    from appworld.ground_truth import GroundTruth

    return GroundTruth(task_id=task_id, required_apps=spec["apps"], public_data=spec["public"],
                       private_data=spec["private"], answer=spec["answer"], evaluation_code=spec["evaluation"],
                       solution_code=solution_file(spec["steps"]), compiled_solution_code=COMPILED_HEAD + spec["compiled"],
                       generator_code="", test_data=test_data, api_calls=api_calls,
                       # the count AppWorld makes of the compiled body (its own count needs `black`)
                       metadata={"mode": "full", "difficulty": spec["difficulty"],
                                 "num_solution_code_lines": len(spec["compiled"].strip().splitlines())})


def _write_task(data: str, task_id: str, spec: dict, notes: list) -> None:
    """specs.json and dbs/ by AppWorld's ``Task.save``; ground_truth/ (unlabelled yet) by ``GroundTruth.save``."""
    from appworld.apps import get_all_apps
    from appworld.apps.admin.models import MainUserMunch
    from appworld.collections.models import ModelCollection
    from appworld.common.constants import DB_VERSION
    from appworld.common.datetime import DateTime
    from appworld.task import Task

    t = ModelCollection.load(to_db_home_path=f":memory:agentrig-task-{task_id}",
                             from_db_home_path=os.path.join(data, "base_dbs"), load_apps=list(get_all_apps()))
    sup_row = t.supervisor.Supervisor.all()[0]
    t.supervisor.Task(supervisor_id=sup_row.id, instruction=spec["instruction"]).save()
    owner = t.simple_note.User.all()[0]
    for title, content, tags in notes:
        t.simple_note.Note(user_id=owner.id, title=title, content=content, tags=tags).save()
    supervisor = MainUserMunch(**{k: SUPERVISOR[k] for k in ("first_name", "last_name", "email", "phone_number")})
    task = Task(id=task_id, instruction=spec["instruction"], supervisor=supervisor,
                datetime=DateTime.fromisoformat(WHEN), allowed_apps=get_all_apps(skip_admin=True),
                db_version=DB_VERSION, model_collection=t)
    task.ground_truth = _ground_truth(task_id, spec)
    task.save(delete_if_exists=True, save_ground_truth=True, ground_truth_mode="full", model_collection_format="changes")
    task.close()


def _label(task_id: str, spec: dict) -> list[str]:
    """Play the compiled solution (as AppWorld's ``verify`` does) and a no-op in AppWorld's engine; write
    the test labels with ``TestTracker.prepare_test_data`` and the solution's API calls. Returns the
    tests' requirements."""
    from appworld import AppWorld
    from appworld.evaluator import TestTracker
    from appworld.ground_truth import GroundTruth

    with AppWorld(task_id=task_id, experiment_name=EXPERIMENT, raise_on_failure=False,
                  ground_truth_mode="full") as world:
        code = world.task.ground_truth.compiled_solution_code + "\nsolution(apis, requester)"
        output = world.execute(code)
        api_calls = [dict(r) for r in world.requester.requests]
        solved = world.evaluate()
        if not solved.success:
            raise RuntimeError(f"{task_id}: its compiled solution fails its own tests: {output}\n"
                               f"{[f['requirement'] for f in solved.failures]}")
    with AppWorld(task_id=task_id, experiment_name=EXPERIMENT) as world:
        noop = world.evaluate()
    test_data = TestTracker.prepare_test_data([dict(p) for p in solved.passes], [dict(p) for p in noop.passes])
    gt = _ground_truth(task_id, spec, test_data=test_data, api_calls=api_calls)
    gt.verify_required_apps()  # AppWorld's own check: the solution's calls use exactly the required apps
    gt.save(mode="full", delete_if_exists=True)
    GroundTruth.load(task_id, mode="full")  # and it reads back
    return [d["requirement"] for d in test_data]


def build(root: str) -> None:
    os.environ["APPWORLD_ROOT"] = root
    import appworld.ground_truth as aw_ground_truth
    from appworld.api_docs import prepare_api_docs
    from appworld.apps import get_all_apps
    from appworld.apps.api_lib import set_local_date_and_time
    from appworld.common.constants import CANARY_STRING
    from appworld.common.datetime import DateTime

    # GroundTruth.save ends by formatting the folder with ruff (installing it when missing): the
    # files here are written formatted already, and nothing is installed into AppWorld's venv
    aw_ground_truth.run_ruff = lambda *args, **kwargs: None

    data = os.path.join(root, "data")
    shutil.rmtree(data, ignore_errors=True)
    apps = list(get_all_apps())
    user_apps = [a for a in apps if a not in ("admin",)]

    # API docs, by AppWorld's own generator
    docs: dict[str, list[dict]] = {}
    for app in user_apps:
        docs[app] = prepare_api_docs(app, format="standard")
        standard = {d["api_name"]: {**d, "canary_string": CANARY_STRING} for d in docs[app]}
        _write(os.path.join(data, "api_docs", "standard", f"{app}.json"), json.dumps(standard, indent=1))

    freezer = set_local_date_and_time(DateTime.fromisoformat(WHEN))
    try:
        _base(data, apps, user_apps, docs)
        for task_id, (spec, notes) in TASKS.items():
            _write_task(data, task_id, spec, notes)
    finally:
        freezer.stop()
    for name, ids in DATASETS.items():
        _write(os.path.join(data, "datasets", f"{name}.txt"), "\n".join(ids) + "\n")
    sidecar = {}
    for task_id, (spec, _notes) in TASKS.items():
        tests = _label(task_id, spec)
        sidecar[task_id] = {k: spec[k] for k in ("instruction", "solution", "wrong_answer", "collateral", "answer",
                                                 "steps", "apps")}
        sidecar[task_id]["tests"] = tests
    shutil.rmtree(os.path.join(root, "experiments"), ignore_errors=True)
    _write(os.path.join(root, "synthetic.json"), json.dumps({"tasks": sidecar, "datasets": DATASETS}, indent=1))


def ship_as_test_set(root: str, dataset: str) -> list[str]:
    """Re-save the ground truth of a dataset's tasks as AppWorld ships its test sets: in ``minimal``
    mode (AppWorld's ``GroundTruth.save``: evaluation, answer, test data, metadata — no solution,
    compiled solution, required apps or API calls)."""
    os.environ["APPWORLD_ROOT"] = root
    import appworld.ground_truth as aw_ground_truth
    from appworld.ground_truth import GroundTruth
    from appworld.task import load_task_ids

    aw_ground_truth.run_ruff = lambda *args, **kwargs: None
    ids = load_task_ids(dataset)
    for task_id in ids:
        gt = GroundTruth.load(task_id, mode="full")
        gt.metadata["mode"] = "minimal"
        gt.save(mode="minimal", delete_if_exists=True)
    return ids


if __name__ == "__main__":
    if sys.argv[1] == "--ship-as-test-set":  # ROOT DATASET
        done = ship_as_test_set(os.path.abspath(sys.argv[2]), sys.argv[3])
        print(json.dumps({"ok": True, "tasks": done}))
    else:
        build(os.path.abspath(sys.argv[1]))
        print(json.dumps({"ok": True, "root": os.path.abspath(sys.argv[1])}))
