"""Build a synthetic AppWorld task at test time (run by the AppWorld venv's python).

Usage: python synthetic_task.py ROOT TASK_ID [TASK_ID ...]

Nothing here is AppWorld's data: a made-up user, supervisor and contact are created on the
installed apps' empty models, and the ground truth (metadata, test data, evaluation) is written
by this script. The result lives under ROOT/data/tasks/TASK_ID, in a temporary folder.
Further task ids get a copy of the first task's folder (nothing in it names its id), so
several tasks cost one build.
"""

import importlib
import json
import os
import shutil
import sys
from datetime import datetime

ROOT, TASK_ID, COPIES = sys.argv[1], sys.argv[2], sys.argv[3:]
os.environ["APPWORLD_ROOT"] = ROOT

# AppWorld is imported by name: it lives only in its own venv, never in evolve's.
get_all_apps = importlib.import_module("appworld.apps").get_all_apps
MainUserMunch = importlib.import_module("appworld.apps.admin.models").MainUserMunch
ApiDocCollection = importlib.import_module("appworld.collections.api_docs").ApiDocCollection
ModelCollection = importlib.import_module("appworld.collections.models").ModelCollection
DB_VERSION = importlib.import_module("appworld.common.constants").DB_VERSION
Task = importlib.import_module("appworld.task").Task

USER = {
    "first_name": "Robin",
    "last_name": "Vale",
    "email": "robin.vale@example.org",
    "phone_number": "5550100001",
    "birthday": "1990-04-01",
}
FRIEND = {"first_name": "Sam", "last_name": "Lee", "phone": "5550100002"}
PASSWORD = "phone-pass-123"
INSTRUCTION = f"Text my friend {FRIEND['first_name']} {FRIEND['last_name']} that dinner is at 7."
REQUIREMENT = "a text message was sent to the friend's phone number"

EVALUATION = f'''
def evaluate(test, public_data, private_data, main_user, models, ground_truth_answer):
    with test("{REQUIREMENT}"):
        phone = models.end.phone
        user = phone.User.find_one(phone_number=private_data["user_phone"])
        friend = phone.User.find_one(phone_number=private_data["friend_phone"])
        sent = phone.GlobalTextMessage.find_all(sender_id=user.id, receiver_id=friend.id)
        test.case(len(sent), ">", 0)
'''


def main() -> None:
    apps = get_all_apps(skip_admin=True)
    # The API docs a task loads are generated from the installed apps, into ROOT/data.
    docs_dir = os.path.join(ROOT, "data", "api_docs", "standard")
    os.makedirs(docs_dir, exist_ok=True)
    for app, api_to_doc in ApiDocCollection.build(load_apps=tuple(apps)).items():
        out = {name: {**dict(doc), "canary_string": ""} for name, doc in api_to_doc.items()}
        with open(os.path.join(docs_dir, app + ".json"), "w", encoding="utf-8") as f:
            json.dump(out, f)
    memory = f":memory:synthetic-{TASK_ID}"
    models = ModelCollection.load(
        to_db_home_path=memory,
        from_db_home_path=memory,
        load_apps=[*apps, "admin"],
        create_db=True,
    )
    when = datetime(2023, 5, 18, 12, 0, 0)  # noqa: DTZ001 - AppWorld keeps naive times
    main = models.admin.MainUser(**USER)
    main.save()
    models.admin.AccountPassword(
        main_user_id=main.id, account_name="phone", password=PASSWORD
    ).save()
    sup = models.supervisor.Supervisor(**USER)
    sup.save()
    models.supervisor.AccountPassword(
        supervisor_id=sup.id, account_name="phone", password=PASSWORD
    ).save()
    models.supervisor.Task(supervisor_id=sup.id, instruction=INSTRUCTION).save()
    me = models.phone.User(
        first_name=USER["first_name"],
        last_name=USER["last_name"],
        phone_number=USER["phone_number"],
        password=PASSWORD,
    )
    me.save()
    friend = models.phone.User(
        first_name=FRIEND["first_name"],
        last_name=FRIEND["last_name"],
        phone_number=FRIEND["phone"],
        password="friend-pass-123",
    )
    friend.save()
    models.phone.Contact(
        user_id=me.id,
        first_name=FRIEND["first_name"],
        last_name=FRIEND["last_name"],
        email="sam.lee@example.org",
        phone_number=FRIEND["phone"],
        relationships=["friend"],
    ).save()
    supervisor = MainUserMunch(
        **USER, account_passwords={"phone": PASSWORD}, addresses={}, payment_cards={}
    )
    task = Task(
        id=TASK_ID,
        instruction=INSTRUCTION,
        supervisor=supervisor,
        datetime=when,
        allowed_apps=apps,
        db_version=DB_VERSION,
        model_collection=models,
    )
    task.save(save_ground_truth=False)
    gt = os.path.join(ROOT, "data", "tasks", TASK_ID, "ground_truth")
    os.makedirs(gt, exist_ok=True)
    files = {
        "metadata.json": {
            "mode": "minimal",
            "difficulty": 1,
            "num_apps": 1,
            "num_apis": 3,
            "num_solution_code_lines": 3,
        },
        "public_data.json": {},
        "private_data.json": {"user_phone": USER["phone_number"], "friend_phone": FRIEND["phone"]},
        "test_data.json": [{"requirement": REQUIREMENT, "label": "no_op_fail"}],
    }
    for name, data in files.items():
        with open(os.path.join(gt, name), "w", encoding="utf-8") as f:
            json.dump(data, f)
    with open(os.path.join(gt, "answer.json"), "w", encoding="utf-8") as f:
        f.write("null")
    with open(os.path.join(gt, "evaluation.py"), "w", encoding="utf-8") as f:
        f.write(EVALUATION)
    tasks = os.path.join(ROOT, "data", "tasks")
    for task_id in COPIES:
        shutil.copytree(os.path.join(tasks, TASK_ID), os.path.join(tasks, task_id))
    print(json.dumps({"task_ids": [TASK_ID, *COPIES], "root": ROOT}))


main()
