"""Build a small AppWorld ``data/`` tree of synthetic tasks with AppWorld's own models (run in its venv).

    python synthetic.py ROOT        # writes ROOT/data (deleting an old one) and ROOT/synthetic.json

Everything is made by AppWorld's own code, in its own format, so that its engine plays and scores
the tasks exactly as it does the real ones:

- ``data/api_docs/standard/<app>.json`` and the ``api_docs`` database: AppWorld's ``prepare_api_docs``
  over its own apps (the docs an agent reads through ``apis.api_docs``);
- ``data/base_dbs/<app>.db``: one supervisor (the main user), her account passwords, and her
  Simple Note account with a few notes;
- per task ``data/tasks/<id>/``: ``specs.json``, ``dbs/<app>.jsonl`` (the task's changes over the
  base databases — its supervisor task row, its own notes), ``ground_truth/`` (``metadata.json``,
  public/private data, the answer, ``evaluation.py`` with named tests, ``test_data.json``, and the
  scripted ``solution.py`` / ``compiled_solution.py``);
- ``data/datasets/{train,dev,test_normal,test_challenge}.txt``.

``synthetic.json`` lists per task the code of its solution and of two wrong plays (a wrong
answer, a collateral change) for the tests' scripted endpoint. The tasks and their wording are
agentrig's own; nothing of AppWorld's task data is used or needed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap

SUPERVISOR = {"first_name": "Maya", "last_name": "Okafor", "email": "maya.okafor@example.com",
              "phone_number": "5550142233", "birthday": "1991-03-14", "sex": "female"}
NOTE_PASSWORD = "quill-7Rf2-lantern"
WHEN = "2023-05-18T12:00:00"

BASE_NOTES = [  # (title, content, tags)
    ("Weekly plan", "gym on tuesday, call the bank on friday", ["work"]),
    ("Reading list", "The Left Hand of Darkness; Piranesi", ["books"]),
    ("Standup notes", "ship the exporter; review the doctor checks", ["work"]),
    ("Old ideas", "a bicycle bell that plays chords", ["ideas"]),
]

LOGIN = textwrap.dedent("""\
    passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
    profile = apis.supervisor.show_profile()
    token = apis.simple_note.login(username=profile["email"], password=passwords["simple_note"])["access_token"]
    """)

NO_OTHER_CHANGES = '''
    with test("""
        assert no model other than {shown} was changed
        (models.changed_model_names)
    """):
        test.case(sorted(models.changed_model_names() - {allowed!r}), "==", [])
'''

EVAL_HEAD = '''from appworld.evaluator import TestTracker


def evaluate(test: TestTracker, public_data, private_data, main_user, models, ground_truth_answer):
    import json

    predicted_answer = json.loads(models.end.supervisor.Task.all()[0].answer)
'''


def _create_note_task(title: str, content: str) -> dict:
    evaluation = EVAL_HEAD + f'''
    with test("""
        assert the answer is empty (this task asks for no answer)
    """):
        test.case(predicted_answer, "in", [None, "<<NOT_GIVEN>>", ""])

    with test("""
        assert exactly one simple_note.Note was added, none updated or removed
        (models.changed_records)
    """):
        added, updated, removed = models.changed_records("simple_note.Note")
        test.case((len(added), len(updated), len(removed)), "==", (1, 0, 0))

    with test("""
        assert the added note has the requested title and content
    """):
        added, _, _ = models.changed_records("simple_note.Note")
        test.case(added[0].title, "==", {title!r})
        test.case(added[0].content.strip(), "==", {content!r})
''' + NO_OTHER_CHANGES.format(allowed={"simple_note.Note"}, shown="simple_note.Note")
    steps = [("login", LOGIN),
             ("create_note", f"apis.simple_note.create_note(title={title!r}, content={content!r}, access_token=token)\n"),
             ("complete_task", "apis.supervisor.complete_task()\n")]
    solution = "".join(code for _, code in steps)
    wrong = LOGIN + (f"apis.simple_note.create_note(title={title!r}, content='(to be written)', access_token=token)\n"
                     "apis.supervisor.complete_task()\n")
    collateral = solution.replace("apis.supervisor.complete_task()",
                                  "apis.simple_note.update_account_name(first_name='Mae', access_token=token)\n"
                                  "apis.supervisor.complete_task()")
    return {"instruction": f"Create a new note in my Simple Note account titled \"{title}\" whose content is "
                           f"exactly \"{content}\".",
            "evaluation": evaluation, "solution": solution, "wrong_answer": wrong, "collateral": collateral,
            "answer": None, "difficulty": 1, "steps": steps}


def _count_task(tag: str, answer: int) -> dict:
    evaluation = EVAL_HEAD + '''
    with test("""
        assert the answer matches the number of notes with the tag
    """):
        test.answer(predicted_answer, ground_truth_answer)
''' + NO_OTHER_CHANGES.format(allowed=set(), shown="the supervisor's task")
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
    solution = "".join(code for _, code in steps)
    wrong = LOGIN + f"apis.supervisor.complete_task(answer={answer + 1})\n"
    collateral = LOGIN + (f"apis.simple_note.create_note(title='count of {tag}', content='{answer}', access_token=token)\n"
                          f"apis.supervisor.complete_task(answer={answer})\n")
    return {"instruction": f"How many notes in my Simple Note account are tagged \"{tag}\"? Answer with the number.",
            "evaluation": evaluation, "solution": solution, "wrong_answer": wrong, "collateral": collateral,
            "answer": answer, "difficulty": 1, "steps": steps}


def _delete_task(title: str) -> dict:
    evaluation = EVAL_HEAD + f'''
    with test("""
        assert exactly one simple_note.Note was removed, none added or updated
        (models.changed_records)
    """):
        added, updated, removed = models.changed_records("simple_note.Note")
        test.case((len(added), len(updated), len(removed)), "==", (0, 0, 1))

    with test("""
        assert the removed note is the one with the requested title
    """):
        _, _, removed = models.changed_records("simple_note.Note")
        test.case([note.title for note in removed], "==", [{title!r}])
''' + NO_OTHER_CHANGES.format(allowed={"simple_note.Note"}, shown="simple_note.Note")
    steps = [("login", LOGIN),
             ("delete_note", textwrap.dedent(f"""\
                notes = apis.simple_note.search_notes(query={title!r}, access_token=token)
                note = next(n for n in notes if n["title"] == {title!r})
                apis.simple_note.delete_note(note_id=note["note_id"], access_token=token)
                """)),
             ("complete_task", "apis.supervisor.complete_task()\n")]
    solution = "".join(code for _, code in steps)
    wrong = LOGIN + textwrap.dedent("""\
        notes = apis.simple_note.search_notes(query="Weekly plan", access_token=token)
        apis.simple_note.delete_note(note_id=notes[0]["note_id"], access_token=token)
        apis.supervisor.complete_task()
        """)
    collateral = solution.replace("apis.supervisor.complete_task()",
                                  "apis.simple_note.create_note(title='deleted', content='" + title + "', access_token=token)\n"
                                  "apis.supervisor.complete_task()")
    return {"instruction": f"Delete the note titled \"{title}\" from my Simple Note account.",
            "evaluation": evaluation, "solution": solution, "wrong_answer": wrong, "collateral": collateral,
            "answer": None, "difficulty": 2, "steps": steps}


def _lenient_task(title: str) -> dict:
    # every test is one a do-nothing play also passes (AppWorld labels them no_op_pass)
    evaluation = EVAL_HEAD + f'''
    with test("""
        assert no note titled {title!r} exists at the end
    """):
        test.case([n.title for n in models.end.simple_note.Note.all() if n.title == {title!r}], "==", [])
''' + NO_OTHER_CHANGES.format(allowed=set(), shown="the supervisor's task")
    steps = [("login", LOGIN),
             ("search_notes", textwrap.dedent(f"""\
                notes = apis.simple_note.search_notes(query={title!r}, access_token=token)
                for n in notes:
                    if n["title"] == {title!r}:
                        apis.simple_note.delete_note(note_id=n["note_id"], access_token=token)
                """)),
             ("complete_task", "apis.supervisor.complete_task()\n")]
    solution = "".join(code for _, code in steps)
    wrong = collateral = LOGIN + (f"apis.simple_note.create_note(title={title!r}, content='draft', access_token=token)\n"
                                  "apis.supervisor.complete_task()\n")
    return {"instruction": f"Make sure my Simple Note account has no note titled \"{title}\".",
            "evaluation": evaluation, "solution": solution, "wrong_answer": wrong, "collateral": collateral,
            "answer": None, "difficulty": 1, "lenient": True, "steps": steps}


# task id → (its spec, the notes its own database adds over the base ones); ids as AppWorld's:
# <scenario>_<number>
TASKS = {
    "5a1c0de_1": (_create_note_task("Groceries", "oat milk, eggs, lemons"), []),
    "5a1c0de_2": (_create_note_task("Packing", "passport, charger, umbrella"), []),
    "6b2d1ef_1": (_count_task("work", 3), [("Budget review", "numbers for q3", ["work"])]),
    "7c3e2fa_1": (_delete_task("Old ideas"), []),
    "8d4f3ab_1": (_lenient_task("Draft"), []),
}
# dev holds every task (the tests play them all); train and test_normal are disjoint (guidelines
# are derived on train and compared before/after on test_normal)
DATASETS = {"train": ["5a1c0de_1", "6b2d1ef_1", "7c3e2fa_1"], "dev": list(TASKS),
            "test_normal": ["5a1c0de_2", "8d4f3ab_1"], "test_challenge": ["7c3e2fa_1"]}


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _solution_file(code: str) -> str:
    body = textwrap.indent(code, "    ")
    return f"def solution(apis, requester):\n{body}"


def build(root: str) -> None:
    os.environ["APPWORLD_ROOT"] = root
    from appworld.api_docs import prepare_api_docs
    from appworld.apps import get_all_apps
    from appworld.collections.models import ModelCollection
    from appworld.common.constants import CANARY_STRING, DB_VERSION
    from appworld.common.datetime import DateTime

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

    freeze = DateTime.fromisoformat(WHEN) if hasattr(DateTime, "fromisoformat") else None
    from appworld.apps.api_lib import set_local_date_and_time

    freezer = set_local_date_and_time(freeze)
    try:
        base = ":memory:agentrig-base"
        m = ModelCollection.load(to_db_home_path=base, from_db_home_path=base, load_apps=apps, create_db=True)
        main = m.admin.MainUser(**SUPERVISOR)
        main.save()
        sup = m.supervisor.Supervisor(**SUPERVISOR)
        sup.save()
        for account in user_apps:
            if account in ("api_docs", "supervisor"):
                continue
            m.supervisor.AccountPassword(supervisor_id=sup.id, account_name=account,
                                         password=NOTE_PASSWORD if account == "simple_note" else f"pw-{account}-91").save()
        user = m.simple_note.User(first_name=SUPERVISOR["first_name"], last_name=SUPERVISOR["last_name"],
                                  email=SUPERVISOR["email"], password=NOTE_PASSWORD, verified=True)
        user.save()
        for title, content, tags in BASE_NOTES:
            m.simple_note.Note(user_id=user.id, title=title, content=content, tags=tags).save()
        for app in user_apps:
            for d in docs[app]:
                m.api_docs.ApiDoc(app_name_=d["app_name"], api_name=d["api_name"], path=d["path"], method=d["method"],
                                  description=d["description"], parameters=d["parameters"],
                                  response_schemas=d["response_schemas"]).save()
        m.save(db_home_path=os.path.join(data, "base_dbs"), format="full", delete_if_exists=True)
        m.close()

        sidecar = {}
        for task_id, (spec, notes) in TASKS.items():
            where = f":memory:agentrig-task-{task_id}"
            t = ModelCollection.load(to_db_home_path=where, from_db_home_path=os.path.join(data, "base_dbs"),
                                     load_apps=apps)
            sup_row = t.supervisor.Supervisor.all()[0]
            t.supervisor.Task(supervisor_id=sup_row.id, instruction=spec["instruction"]).save()
            owner = t.simple_note.User.all()[0]
            for title, content, tags in notes:
                t.simple_note.Note(user_id=owner.id, title=title, content=content, tags=tags).save()
            folder = os.path.join(data, "tasks", task_id)
            t.save(db_home_path=os.path.join(folder, "dbs"), format="changes", delete_if_exists=True)
            t.close()
            specs = {"instruction": spec["instruction"],
                     "supervisor": {k: SUPERVISOR[k] for k in ("first_name", "last_name", "email", "phone_number")},
                     "datetime": WHEN, "db_version": DB_VERSION, "canary_string": CANARY_STRING}
            _write(os.path.join(folder, "specs.json"), json.dumps(specs, indent=1))
            gt = os.path.join(folder, "ground_truth")
            names = _requirements(spec["evaluation"])
            no_op_pass = set(names) if spec.get("lenient") else {n for n in names if n.startswith("assert no model")}
            if spec["answer"] is None:
                no_op_pass |= {n for n in names if n.startswith("assert the answer is empty")}
            test_data = [{"requirement": n, "label": "no_op_pass" if n in no_op_pass else "no_op_fail"} for n in names]
            metadata = {"mode": "full", "difficulty": spec["difficulty"], "num_apps": 1,
                        "num_solution_code_lines": len(spec["solution"].strip().splitlines())}
            files = {"metadata.json": json.dumps(metadata, indent=1), "public_data.json": "{}",
                     "private_data.json": "{}", "answer.json": json.dumps(spec["answer"]),
                     "evaluation.py": spec["evaluation"], "test_data.json": json.dumps(test_data, indent=1),
                     "required_apps.json": json.dumps(["simple_note"]),
                     "solution.py": _solution_file(spec["solution"]),
                     "compiled_solution.py": _solution_file(spec["solution"]),
                     "generator.py": "", "api_calls.json": "[]"}
            for name, text in files.items():
                _write(os.path.join(gt, name), text)
            sidecar[task_id] = {k: spec[k] for k in ("instruction", "solution", "wrong_answer", "collateral", "answer",
                                                     "steps")}
            sidecar[task_id]["lenient"] = bool(spec.get("lenient"))
            sidecar[task_id]["tests"] = names
    finally:
        freezer.stop()
    for name, ids in DATASETS.items():
        _write(os.path.join(data, "datasets", f"{name}.txt"), "\n".join(ids) + "\n")
    _write(os.path.join(root, "synthetic.json"), json.dumps({"tasks": sidecar, "datasets": DATASETS}, indent=1))


def _requirements(evaluation: str) -> list[str]:
    """The requirement texts of the evaluation's tests, as AppWorld's TestTracker records them."""
    import re

    out = []
    for block in re.findall(r'with test\("""(.*?)"""\)', evaluation, re.S):
        out.append(textwrap.dedent(block).strip())
    return out


if __name__ == "__main__":
    build(os.path.abspath(sys.argv[1]))
    print(json.dumps({"ok": True, "root": os.path.abspath(sys.argv[1])}))
