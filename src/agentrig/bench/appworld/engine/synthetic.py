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

One task uses two apps (Simple Note and Phone). ``synthetic.json`` lists per task the steps of
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

SUPERVISOR = {"first_name": "Maya", "last_name": "Okafor", "email": "maya.okafor@example.com",
              "phone_number": "5550142233", "birthday": "1991-03-14", "sex": "female"}
FRIEND = {"first_name": "Jonah", "last_name": "Reyes", "email": "jonah.reyes@example.com",
          "phone_number": "5550198877"}
NOTE_PASSWORD = "quill-7Rf2-lantern"
PHONE_PASSWORD = "dial-4Kp9-harbor"
WHEN = "2023-05-18T12:00:00"
EXPERIMENT = "agentrig-synthetic"

BASE_NOTES = [  # (title, content, tags)
    ("Weekly plan", "gym on tuesday, call the bank on friday", ["work"]),
    ("Reading list", "The Left Hand of Darkness; Piranesi", ["books"]),
    ("Standup notes", "ship the exporter; review the doctor checks", ["work"]),
    ("Old ideas", "a bicycle bell that plays chords", ["ideas"]),
]

# -- the steps an agent plays (one block of code each) -------------------------------------------
PASSWORDS = 'passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}\n'
LOGIN = PASSWORDS + textwrap.dedent("""\
    profile = apis.supervisor.show_profile()
    token = apis.simple_note.login(username=profile["email"], password=passwords["simple_note"])["access_token"]
    """)
LOGIN_BOTH = LOGIN + ('phone_token = apis.phone.login(username=profile["phone_number"], '
                      'password=passwords["phone"])["access_token"]\n')
COMPLETE = "apis.supervisor.complete_task()\n"

# -- the compiled solution's module: imports and helpers beside solution() -----------------------
COMPILED_HEAD = '''from appworld.collections.apis import ApiCollection
from appworld.requester import Requester


def account_passwords(apis: ApiCollection) -> dict[str, str]:
    return {entry["account_name"]: entry["password"] for entry in apis.supervisor.show_account_passwords()}


def note_token(apis: ApiCollection) -> str:
    email = apis.supervisor.show_profile()["email"]
    password = account_passwords(apis)["simple_note"]
    return apis.simple_note.login(username=email, password=password)["access_token"]


def phone_token(apis: ApiCollection) -> str:
    number = apis.supervisor.show_profile()["phone_number"]
    password = account_passwords(apis)["phone"]
    return apis.phone.login(username=number, password=password)["access_token"]


def all_notes(apis: ApiCollection, token: str, **filters: object) -> list[dict]:
    notes, page = [], 0
    while True:
        found = apis.simple_note.search_notes(page_index=page, access_token=token, **filters)
        if not found:
            return notes
        notes.extend(found)
        page += 1


def solution(apis: ApiCollection, requester: Requester) -> None:
'''

SOLUTION_HEAD = '''from collections.abc import Iterator

from appworld.collections.apis import ApiCollection
from appworld.requester import Requester


def solution(apis: ApiCollection, requester: Requester) -> None:
    for _ in _solution(apis, requester):
        pass


def _solution(apis: ApiCollection, requester: Requester) -> Iterator[None]:
'''

# -- evaluation.py, shaped as AppWorld's real ones ------------------------------------------------
EVAL_HEAD = '''import json

from munch import Munch

from appworld.apps.admin.models import MainUserMunch
from appworld.collections.models import ModelCollectionPair
from appworld.common.types import AnswerType
from appworld.evaluator import TestTracker


def evaluate(
    test: TestTracker,
    public_data: Munch,
    private_data: Munch,
    main_user: MainUserMunch,
    models: ModelCollectionPair,
    ground_truth_answer: AnswerType,
) -> None:
    active_tasks = models.end.supervisor.Task.all()
    try:
        predicted_answer = json.loads(active_tasks[0].answer)
    except json.JSONDecodeError:
        predicted_answer = active_tasks[0].answer  # when task_completion is not committed.
'''


def _test(requirement: str, body: str) -> str:
    """One ``with test(...)`` block of ``evaluate``, as AppWorld writes them."""
    req = textwrap.indent(textwrap.dedent(requirement).strip(), " " * 8)
    code = textwrap.indent(textwrap.dedent(body).strip(), " " * 8)
    return f'    with test(\n        """\n{req}\n        """\n    ):\n{code}\n'


ANSWERS = _test("assert answers match.", "test.answer(predicted_answer, ground_truth_answer)")


def _model_changes(names: list[str]) -> str:
    if not names:
        return _test("assert no model changes.", 'test.case(models.changed_model_names(), "==", set())')
    shown = ", ".join(names)
    requirement = f"assert model changes match {shown}." if len(shown) < 50 else \
        "assert model changes match\n" + shown + "."
    return _test(requirement, f'test.case(models.changed_model_names(), "==", {set(names)!r})')


def _task(instruction: str, tests: list[str], steps: list[tuple[str, str]], compiled: str, *, apps: list[str],
          difficulty: int, wrong: str, collateral: str, answer=None, public: dict | None = None,
          private: dict | None = None) -> dict:
    return {"instruction": instruction, "evaluation": EVAL_HEAD + "".join(tests), "steps": steps,
            "compiled": compiled, "apps": apps, "difficulty": difficulty, "answer": answer,
            "solution": "".join(code for _, code in steps), "wrong_answer": wrong, "collateral": collateral,
            "public": public or {}, "private": private or {}}


def _create_note_task(title: str, content: str) -> dict:
    tests = [ANSWERS, _model_changes(["simple_note.Note"]),
             _test("""
                 obtain added, updated, removed simple_note.Note records using models.changed_records,
                 and assert 1 was added, 0 were updated or removed.
             """, """
                 added, updated, removed = models.changed_records("simple_note.Note")
                 test.case((len(added), len(updated), len(removed)), "==", (1, 0, 0))
             """),
             _test("""
                 assert the added note has the requested title and content
                 (public_data.title, public_data.content).
             """, """
                 added, _, _ = models.changed_records("simple_note.Note")
                 test.case(added[0].title, "==", public_data.title)
                 test.case(added[0].content.strip(), "==", public_data.content)
             """)]
    steps = [("login", LOGIN),
             ("create_note", f"apis.simple_note.create_note(title={title!r}, content={content!r}, access_token=token)\n"),
             ("complete_task", COMPLETE)]
    compiled = (f"    token = note_token(apis)\n"
                f"    apis.simple_note.create_note(title={title!r}, content={content!r}, access_token=token)\n"
                f"    apis.supervisor.complete_task()\n")
    wrong = LOGIN + f"apis.simple_note.create_note(title={title!r}, content='(to be written)', access_token=token)\n" + COMPLETE
    collateral = LOGIN + steps[1][1] + "apis.simple_note.update_account_name(first_name='Mae', access_token=token)\n" + COMPLETE
    return _task(f"Create a new note in my Simple Note account titled \"{title}\" whose content is exactly \"{content}\".",
                 tests, steps, compiled, apps=["simple_note"], difficulty=1, wrong=wrong, collateral=collateral,
                 public={"title": title, "content": content})


def _count_task(tag: str, answer: int) -> dict:
    tests = [ANSWERS, _model_changes([])]
    steps = [("login", LOGIN),
             ("search_notes", textwrap.dedent(f"""\
                count = 0
                page = 0
                while True:
                    notes = apis.simple_note.search_notes(tags=[{tag!r}], page_index=page, access_token=token)
                    if not notes:
                        break
                    count += len(notes)
                    page += 1
                """)),
             ("complete_task", "apis.supervisor.complete_task(answer=count)\n")]
    compiled = (f"    notes = all_notes(apis, note_token(apis), tags=[{tag!r}])\n"
                f"    apis.supervisor.complete_task(answer=len(notes))\n")
    wrong = LOGIN + f"apis.supervisor.complete_task(answer={answer + 1})\n"
    collateral = LOGIN + (f"apis.simple_note.create_note(title='count of {tag}', content='{answer}', access_token=token)\n"
                          f"apis.supervisor.complete_task(answer={answer})\n")
    return _task(f"How many notes in my Simple Note account are tagged \"{tag}\"? Answer with the number.",
                 tests, steps, compiled, apps=["simple_note"], difficulty=1, wrong=wrong, collateral=collateral,
                 answer=answer, public={"tag": tag})


def _delete_task(title: str) -> dict:
    tests = [ANSWERS, _model_changes(["simple_note.Note"]),
             _test("""
                 obtain added, updated, removed simple_note.Note records using models.changed_records,
                 and assert 0 were added or updated, 1 was removed.
             """, """
                 added, updated, removed = models.changed_records("simple_note.Note")
                 test.case((len(added), len(updated), len(removed)), "==", (0, 0, 1))
             """),
             _test("""
                 assert the removed note is the one with the requested title (public_data.title).
             """, """
                 _, _, removed = models.changed_records("simple_note.Note")
                 test.case([note.title for note in removed], "==", [public_data.title])
             """)]
    steps = [("login", LOGIN),
             ("delete_note", textwrap.dedent(f"""\
                notes = apis.simple_note.search_notes(query={title!r}, access_token=token)
                note = next(n for n in notes if n["title"] == {title!r})
                apis.simple_note.delete_note(note_id=note["note_id"], access_token=token)
                """)),
             ("complete_task", COMPLETE)]
    compiled = textwrap.indent(textwrap.dedent(f"""\
        token = note_token(apis)
        note = next(n for n in all_notes(apis, token, query={title!r}) if n["title"] == {title!r})
        apis.simple_note.delete_note(note_id=note["note_id"], access_token=token)
        apis.supervisor.complete_task()
        """), "    ")
    wrong = LOGIN + textwrap.dedent("""\
        notes = apis.simple_note.search_notes(query="Weekly plan", access_token=token)
        apis.simple_note.delete_note(note_id=notes[0]["note_id"], access_token=token)
        apis.supervisor.complete_task()
        """)
    collateral = LOGIN + steps[1][1] + (f"apis.simple_note.create_note(title='deleted', content={title!r}, access_token=token)\n"
                                        + COMPLETE)
    return _task(f"Delete the note titled \"{title}\" from my Simple Note account.", tests, steps, compiled,
                 apps=["simple_note"], difficulty=2, wrong=wrong, collateral=collateral, public={"title": title})


def _text_note_task(title: str, content: str) -> dict:
    # two apps: read a note in Simple Note, send its content by text message on the phone
    tests = [ANSWERS, _model_changes(["phone.GlobalTextMessage", "phone.UserTextMessage"]),
             _test("""
                 assert exactly one text message was sent, to private_data.friend_phone_number,
                 with the note's content (private_data.message).
             """, """
                 sent = models.changed_records("phone.GlobalTextMessage")[0]
                 test.case(len(sent), "==", 1)
                 test.case(sent[0].receiver.phone_number, "==", private_data.friend_phone_number)
                 test.case(sent[0].message.strip(), "==", private_data.message)
             """)]
    steps = [("login", LOGIN_BOTH),
             ("search_notes", textwrap.dedent(f"""\
                notes = apis.simple_note.search_notes(query={title!r}, access_token=token)
                note = apis.simple_note.show_note(note_id=next(n for n in notes if n["title"] == {title!r})["note_id"],
                                                  access_token=token)
                friend = apis.phone.search_contacts(query={FRIEND["first_name"]!r}, access_token=phone_token)[0]
                """)),
             ("send_text", "apis.phone.send_text_message(phone_number=friend[\"phone_number\"], message=note[\"content\"], "
                           "access_token=phone_token)\n"),
             ("complete_task", COMPLETE)]
    compiled = textwrap.indent(textwrap.dedent(f"""\
        token = note_token(apis)
        found = next(n for n in all_notes(apis, token, query={title!r}) if n["title"] == {title!r})
        content = apis.simple_note.show_note(note_id=found["note_id"], access_token=token)["content"]
        on_phone = phone_token(apis)
        friend = apis.phone.search_contacts(query={FRIEND["first_name"]!r}, access_token=on_phone)[0]
        apis.phone.send_text_message(phone_number=friend["phone_number"], message=content, access_token=on_phone)
        apis.supervisor.complete_task()
        """), "    ")
    wrong = LOGIN_BOTH + (f"apis.phone.send_text_message(phone_number={FRIEND['phone_number']!r}, message='see you soon', "
                          "access_token=phone_token)\n" + COMPLETE)
    collateral = (LOGIN_BOTH + steps[1][1] + steps[2][1]
                  + f"apis.simple_note.create_note(title='sent to Jonah', content={title!r}, access_token=token)\n" + COMPLETE)
    return _task(f"Text my friend {FRIEND['first_name']} {FRIEND['last_name']} (a contact on my phone) the content of my "
                 f"Simple Note note titled \"{title}\", word for word.", tests, steps, compiled,
                 apps=["phone", "simple_note"], difficulty=2, wrong=wrong, collateral=collateral, public={"title": title},
                 private={"friend_phone_number": FRIEND["phone_number"], "message": content})


# task id → (its spec, the notes its own database adds over the base ones); ids as AppWorld's:
# <scenario>_<number>
TASKS = {
    "5a1c0de_1": (_create_note_task("Groceries", "oat milk, eggs, lemons"), []),
    "5a1c0de_2": (_create_note_task("Packing", "passport, charger, umbrella"), []),
    "6b2d1ef_1": (_count_task("work", 3), [("Budget review", "numbers for q3", ["work"])]),
    "7c3e2fa_1": (_delete_task("Old ideas"), []),
    "8d4f3ab_1": (_text_note_task("Reading list", "The Left Hand of Darkness; Piranesi"), []),
}
# dev holds every task (the tests play them all); train and test_normal are disjoint (guidelines
# are derived on train and compared before/after on test_normal)
DATASETS = {"train": ["5a1c0de_1", "6b2d1ef_1", "7c3e2fa_1"], "dev": list(TASKS),
            "test_normal": ["5a1c0de_2", "8d4f3ab_1"], "test_challenge": ["7c3e2fa_1"]}


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
