"""The synthetic AppWorld tasks (their wording, tests, solutions and wrong plays), written out by
``synthetic.py`` with AppWorld's own code. Standard library only (run in AppWorld's venv).

Each evaluation is shaped as AppWorld's real ones are: ``assert answers match.`` first, then
``assert model changes match <models>.`` ("nothing else changed"; ``assert no model changes.`` for a
question), then the task's own tests. Each task has its solution twice — the steps an agent plays
(one block of code each: ``synthetic.json`` and the generator-form ``solution.py``) and a compiled
solution, a module with imports and helpers beside ``solution(apis, requester)`` — and two wrong
plays: a wrong answer or end state, and a collateral change.
"""

from __future__ import annotations

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
