"""The AppWorld worker: run by the AppWorld venv's python, never imported by evolve.

It speaks one JSON object per line: a request on stdin, an answer on stdout
(``{"ok": true, ...}`` or ``{"ok": false, "error": "..."}``). It imports only the standard
library and AppWorld. AppWorld prints to stdout; the protocol uses a private copy of the
original stdout and fd 1 is pointed at stderr, so nothing AppWorld prints can corrupt it.
One world is open at a time (AppWorld freezes the clock of the process that opens one).
When stdin closes (evolve exited or was killed) the worker closes its world and exits.
"""

import contextlib
import importlib
import json
import os
import shutil
import sys
import time
import traceback
from typing import Any

_PROTOCOL = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

PERSONA_APPS = ("supervisor", "phone", "venmo", "simple_note", "gmail")

_state: dict[str, Any] = {"world": None}


def _mod(name: str) -> Any:
    """An AppWorld module (imported by name: evolve's type checker never sees AppWorld)."""
    return importlib.import_module(name)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def op_hello(req: dict[str, Any]) -> dict[str, Any]:
    appworld = _mod("appworld")
    apps = _mod("appworld.apps").get_all_apps(skip_admin=True)
    missing = [a for a in req.get("need_apps", PERSONA_APPS) if a not in apps]
    if not missing:
        for app in req.get("need_apps", PERSONA_APPS):
            try:
                _mod(f"appworld.apps.{app}.apis")
            except ImportError:
                missing.append(app)
    return {"version": appworld.__version__, "apps": apps, "missing_apps": missing}


def _data_dir() -> str:
    return str(_mod("appworld.common.path_store").path_store.data)


def op_tasks(req: dict[str, Any]) -> dict[str, Any]:
    tasks_dir = os.path.join(_data_dir(), "tasks")
    out = {}
    if os.path.isdir(tasks_dir):
        for task_id in sorted(os.listdir(tasks_dir)):
            specs = os.path.join(tasks_dir, task_id, "specs.json")
            if not os.path.isfile(specs):
                continue
            with open(specs, encoding="utf-8") as f:
                data = json.load(f)
            out[task_id] = {
                "instruction": data.get("instruction", ""),
                "datetime": data.get("datetime", ""),
            }
    datasets = {}
    ds_dir = os.path.join(_data_dir(), "datasets")
    if os.path.isdir(ds_dir):
        for name in sorted(os.listdir(ds_dir)):
            if name.endswith(".txt"):
                with open(os.path.join(ds_dir, name), encoding="utf-8") as f:
                    datasets[name[:-4]] = [line.strip() for line in f if line.strip()]
    return {"tasks": out, "datasets": datasets, "data": _data_dir()}


def op_docs(req: dict[str, Any]) -> dict[str, Any]:
    prepare_api_docs = _mod("appworld.api_docs").prepare_api_docs
    out = []
    for app in req["apps"]:
        for doc in prepare_api_docs(app):
            out.append(
                {
                    "app": app,
                    "api": doc["api_name"],
                    "description": doc.get("description", ""),
                    "parameters": [
                        {
                            "name": p["name"],
                            "type": p.get("type", ""),
                            "required": bool(p.get("required")),
                            "description": p.get("description", ""),
                        }
                        for p in doc.get("parameters", [])
                    ],
                }
            )
    return {"docs": out}


def _close_world() -> None:
    world = _state["world"]
    _state["world"] = None
    if world is not None:
        world.close()
        # AppWorld's own logs of the episode hold access tokens: leave none behind.
        shutil.rmtree(world.base_output_directory, ignore_errors=True)
        # Without this, a second experiment of the same task is evaluated on stale DBs.
        _mod("appworld.apps.model_lib").CachedDBHandler.reset()


def op_open(req: dict[str, Any]) -> dict[str, Any]:
    _close_world()
    world = _mod("appworld").AppWorld(
        task_id=req["task_id"],
        experiment_name=req["experiment"],
        parse_datetimes=False,
        munchify_response=False,
        raise_on_failure=True,
    )
    _state["world"] = world
    sup = world.task.supervisor
    profile = {k: sup[k] for k in ("first_name", "last_name", "email", "phone_number")}
    return {"instruction": world.task.instruction, "supervisor": profile}


def _world() -> Any:
    world = _state["world"]
    if world is None:
        raise RuntimeError("no world is open")
    return world


def op_call(req: dict[str, Any]) -> dict[str, Any]:
    world = _world()
    app, api = req["app"], req["api"]
    if not (app.isidentifier() and api.isidentifier()):
        return {"call_ok": False, "error": f"there is no API named {app}__{api}"}
    ns = world.shell.user_ns
    ns["_evolve_args"] = req.get("args", {})
    ns.pop("_evolve_result", None)
    message = world.execute(f"_evolve_result = apis.{app}.{api}(**_evolve_args)")
    completed = bool(world.task_completed())
    if message.startswith("Execution failed"):
        lines = [line for line in message.splitlines() if line.strip()]
        error = lines[-1].strip() if lines else message
        return {"call_ok": False, "error": error[:2000], "completed": completed}
    return {"call_ok": True, "result": _jsonable(ns.get("_evolve_result")), "completed": completed}


def op_evaluate(req: dict[str, Any]) -> dict[str, Any]:
    world = _world()
    tracker = world.evaluate()
    data = tracker.to_dict()
    return {
        "success": bool(data["success"]),
        "num_tests": data.get("num_tests"),
        "passes": [p.get("requirement") for p in data.get("passes", [])],
        "failures": [
            {"requirement": f.get("requirement"), "trace": str(f.get("trace", ""))[:500]}
            for f in data.get("failures", [])
        ],
        "completed": bool(world.task_completed()),
    }


def op_close(req: dict[str, Any]) -> dict[str, Any]:
    _close_world()
    return {}


def op_sleep(req: dict[str, Any]) -> dict[str, Any]:  # for tests of evolve's call timeout
    time.sleep(float(req.get("seconds", 3600)))
    return {}


OPS = {
    "hello": op_hello,
    "tasks": op_tasks,
    "docs": op_docs,
    "open": op_open,
    "call": op_call,
    "evaluate": op_evaluate,
    "close": op_close,
    "sleep": op_sleep,
}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            handler = OPS.get(req.get("op"))
            if handler is None:
                answer = {"ok": False, "error": f"unknown op {req.get('op')!r}"}
            else:
                answer = {"ok": True, **handler(req)}
        except Exception as exc:  # noqa: BLE001 - reported to evolve as one sentence
            traceback.print_exc(file=sys.stderr)
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        _PROTOCOL.write(json.dumps(answer, default=str) + "\n")
        _PROTOCOL.flush()
    with contextlib.suppress(Exception):
        _close_world()


if __name__ == "__main__":
    main()
